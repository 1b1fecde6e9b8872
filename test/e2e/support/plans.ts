// PatchPlan documents for the end-to-end tests, built from the examples the README shows.
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
export const factoryImage = (installer: string, version: string): string => `${installer}-installer/${VANILLA_SCHEMATIC}:${version}`;

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
