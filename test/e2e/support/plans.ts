// PatchPlan documents for the end-to-end tests, built from the examples the docs show.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { VANILLA_SCHEMATIC } from '../../lab/talos/index.js';
import { TALOS_SECRET } from './job-lab.js';

const examples = fileURLToPath(new URL('../../../examples/', import.meta.url));

export type PlanDoc = { apiVersion: string; kind: string; metadata: { name: string }; spec: Record<string, unknown> };

export function examplePlan(file: string): PlanDoc {
  return parse(readFileSync(`${examples}${file}`, 'utf8')) as PlanDoc;
}

/** The installer image a factory plan with `installer` and no schematicID needs for lab nodes. */
export const factoryImage = (installer: string, version: string): string =>
  `${installer}-installer/${VANILLA_SCHEMATIC}:${version}`;

/** A plan reaching the lab: the simulator's endpoint, the lab Secret, no delay between rounds. */
export function labPlan(doc: PlanDoc, talosEndpoint: string, spec: Record<string, unknown> = {}): PlanDoc {
  return {
    ...doc,
    spec: {
      ...doc.spec,
      delayBetweenNodes: '0s',
      talosConfig: { endpoints: [talosEndpoint], secretRef: { name: TALOS_SECRET } },
      ...spec,
    },
  };
}

/** Labels that give the custom-groups example one node per group on a 1 control-plane + 3 worker fleet. */
const PRODUCTION = { environment: 'production' };
export const SMALL_CUSTOM_GROUPS_LABELS: Record<string, Record<string, string>> = {
  'cp-1': PRODUCTION,
  'worker-1': { ...PRODUCTION, workload: 'database' },
  'worker-2': { ...PRODUCTION, accelerator: 'nvidia' },
  'worker-3': PRODUCTION,
};
