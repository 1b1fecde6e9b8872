// The plan spec the health-gate decision tests share: one Longhorn volumes check, workers only.
import { patchPlanSpec, type PatchPlanSpec } from '../../../schemas/patchplan.js';

export function volumesGatedSpec(policy: string, onNoMatch?: string): PatchPlanSpec {
  return patchPlanSpec.parse({
    target: { talosVersion: 'v1.13.2' },
    delayBetweenNodes: '0s',
    strategy: { order: ['workers'] },
    failurePolicy: { type: policy },
    talosConfig: { secretRef: { name: 't' } },
    healthChecks: [
      {
        name: 'volumes',
        apiVersion: 'longhorn.io/v1beta2',
        kind: 'Volume',
        expr: 'status.robustness == "healthy"',
        timeout: '5s',
        ...(onNoMatch === undefined ? {} : { onNoMatch }),
      },
    ],
  });
}
