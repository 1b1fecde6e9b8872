// Explanations for unknown fields people are likely to write: fields of the original project's older
// API, inline credentials, and things that never belong in a plan file.
const CREDENTIALS =
  'inline credentials are not accepted in plan files; store ca.crt, tls.crt and tls.key in a Secret in the operator namespace and set talosConfig.secretRef';
const ORDER =
  'control plane/worker selection and order are set with spec.strategy.order (e.g. [controlPlane, workers])';

/** Keyed by the dotted path of the unknown field. */
export const UNKNOWN_FIELD_HINTS: Readonly<Record<string, string>> = {
  status: 'status is written by the controller; remove it from the plan file',
  'metadata.namespace': 'PatchPlan is cluster-scoped; remove metadata.namespace',
  'spec.targetVersion': 'the target moved to spec.target.talosVersion',
  'spec.target.version': 'the Talos version field is spec.target.talosVersion',
  'spec.maxConcurrency': 'concurrency is set per group: spec.groups.<group>.concurrency',
  'spec.maxFailures': 'use spec.failurePolicy.maxFailures',
  'spec.patchControlPlane': ORDER,
  'spec.patchWorkers': ORDER,
  'spec.controlPlaneFirst': ORDER,
  'spec.talosConfig.caCert': CREDENTIALS,
  'spec.talosConfig.clientCert': CREDENTIALS,
  'spec.talosConfig.clientKey': CREDENTIALS,
};
