// A fleet file for `lab up --fleet`: a YAML list of nodes, checked before anything starts.
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { z } from 'zod';
import type { FleetNodeSpec } from './types.js';

const version = z.string().regex(/^v\d+\.\d+\.\d+$/, 'expected a quoted version like "v1.12.4"');
const nodeSchema = z.strictObject({
  name: z.string().regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, 'expected a DNS-1123 node name'),
  role: z.enum(['controlplane', 'worker']),
  talosVersion: version,
  kubernetesVersion: version,
  schematic: z.string().regex(/^[0-9a-f]{64}$/, 'expected a 64-hex-digit schematic ID'),
  internalIP: z
    .string()
    .regex(/^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/, 'lab nodes use loopback addresses (127.0.0.0/8) only'),
  labels: z.record(z.string(), z.string()).optional(),
});
const fleetSchema = z.array(nodeSchema).min(1, 'a fleet needs at least one node');

export function readFleetFile(path: string): FleetNodeSpec[] {
  const result = fleetSchema.safeParse(parse(readFileSync(path, 'utf8')));
  if (result.success) return result.data;
  const problems = result.error.issues.map((i) => `${path}: ${i.path.join('.') || '(top)'}: ${i.message}`);
  throw new Error(problems.join('\n'));
}
