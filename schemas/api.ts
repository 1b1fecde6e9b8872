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
/** Where hook Jobs run (--hooks-namespace): Pod Security `restricted`, none of the controller's Secrets. */
export const DEFAULT_HOOKS_NAMESPACE = 'kangal-patch-hooks';

/** Condition type set once the preflight checks of a plan have run. */
export const ConditionPreflightPassed = 'PreflightPassed';
/** A stepwise plan's preflight found the support matrix knows every Talos minor the releases show (False: it is behind). */
export const ConditionSupportMatrixCurrent = 'SupportMatrixCurrent';

/**
 * Condition type on a finished PatchJob: True once the node is given back (uncordoned, when this
 * job cordoned it) and the concurrency slot freed; False with why not yet. Housekeeping lives here
 * so that a Failed job's reason and message keep saying why it failed.
 */
export const ConditionNodeReleased = 'NodeReleased';

/** Annotations and the finalizer of PatchPlans the GitOps loop applies (kubectl-applied plans carry none). */
export const Annotation = {
  /** Git commit the plan was last synced from (moves with every commit of the branch: status.observedSourceCommit, the commit status). */
  SourceCommit: `${API_GROUP}/source-commit`,
  /**
   * Git commit the plan's spec and path came from: set when the file is added, changed or moved,
   * kept while other commits leave it alone. The rollout report names it and links the file at it.
   */
  SpecCommit: `${API_GROUP}/spec-commit`,
  /** File (repository path) the plan was loaded from. */
  SourcePath: `${API_GROUP}/source-path`,
  /** `gitops` on plans the loop created: only those are pruned or drift-corrected. */
  ManagedBy: `${API_GROUP}/managed-by`,
  /** Set while the plan's file in Git does not load: `file:line:col: path: message; ...` (the last good spec stays applied). */
  SourceProblems: `${API_GROUP}/source-problems`,
  /** Any change of its value on any PatchPlan triggers an immediate poll of the plans repository. */
  ReconcileNow: `${API_GROUP}/reconcile-now`,
} as const;
export const MANAGED_BY_GITOPS = 'gitops';
/** Holds a plan whose file left Git until none of its PatchJobs is running. */
export const PLAN_FINALIZER = `${API_GROUP}/finalizer`;

/** Condition type on a Git-managed plan: False while its file in Git is invalid (the last good spec stays applied). */
export const ConditionSourceValid = 'SourceValid';
