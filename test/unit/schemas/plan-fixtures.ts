// Builders for plan documents used by the schema tests.
import { stringify } from 'yaml';

export type Doc = {
  apiVersion?: unknown;
  kind?: unknown;
  metadata: Record<string, unknown>;
  spec: Record<string, unknown> & { target: Record<string, unknown>; talosConfig: Record<string, unknown> };
  [key: string]: unknown;
};

/** The smallest valid plan. */
export function basePlan(): Doc {
  return {
    apiVersion: 'kangalpatch.ozalp.dk/v1alpha1',
    kind: 'PatchPlan',
    metadata: { name: 'p' },
    spec: {
      target: { talosVersion: 'v1.12.1' },
      talosConfig: { secretRef: { name: 'talos-credentials' } },
    },
  };
}

/** A base plan changed by `edit`, rendered as YAML the way a person would write it. */
export function planYaml(edit: (d: Doc) => void): string {
  const d = basePlan();
  edit(d);
  return stringify(d);
}
