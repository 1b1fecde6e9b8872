// API group, version and kinds. Kept compatible with the original KangalPatch CRDs.
export const API_GROUP = 'kangalpatch.ozalp.dk';
export const API_VERSION_NAME = 'v1alpha1';
export const API_VERSION = `${API_GROUP}/${API_VERSION_NAME}`;

export const Kind = { PatchPlan: 'PatchPlan', PatchJob: 'PatchJob' } as const;
export type Kind = (typeof Kind)[keyof typeof Kind];

/** Groups that exist without being declared under spec.groups. */
export const BuiltInGroup = { ControlPlane: 'controlPlane', Workers: 'workers' } as const;
export type BuiltInGroup = (typeof BuiltInGroup)[keyof typeof BuiltInGroup];
export const BUILT_IN_GROUPS: readonly string[] = Object.values(BuiltInGroup);

/** Namespace of the operator, where the Talos credentials Secret must live. */
export const DEFAULT_OPERATOR_NAMESPACE = 'kangal-patch';

/** Condition type set once the preflight checks of a plan have run. */
export const ConditionPreflightPassed = 'PreflightPassed';
