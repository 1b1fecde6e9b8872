// What the status view is computed from: projections of the cluster's PatchPlans, PatchJobs and
// Nodes, typed by the zod schemas. The kube adapter's PlanView, JobView and NodeView fit these
// shapes as they are; the demo's lab client builds them from raw objects.
import type { PatchJobSpec, PatchJobStatus } from '../../../schemas/patchjob.js';
import type { PatchPlanSpec, PatchPlanStatus } from '../../../schemas/patchplan.js';

export interface StatusPlanInput {
  name: string;
  /** epoch ms of metadata.creationTimestamp: "newest first" orders by it. */
  created: number;
  labels: Readonly<Record<string, string>>;
  /** undefined when the stored spec does not parse (the plan is still shown, from its status). */
  spec: PatchPlanSpec | undefined;
  status: PatchPlanStatus;
  /** The report pull request's URL is one of them (REPORT_URL_ANNOTATION), once the controller opened it. */
  annotations?: Readonly<Record<string, string>> | undefined;
}

export interface StatusJobInput {
  name: string;
  /** The plan, group and node labels the plan reconciler puts on every PatchJob (used when the spec does not parse). */
  labels: Readonly<Record<string, string>>;
  spec: PatchJobSpec | undefined;
  status: PatchJobStatus;
}

export interface StatusNodeInput {
  name: string;
  talosVersion: string | undefined;
  kubeletVersion: string;
  ready: boolean;
  unschedulable: boolean;
}

export interface StatusInput {
  plans: readonly StatusPlanInput[];
  jobs: readonly StatusJobInput[];
  /** undefined when the viewer may not read Nodes (the viewer ClusterRole grants plans and jobs only). */
  nodes: readonly StatusNodeInput[] | undefined;
  /** The plans asked for, in the order given; empty: every plan, newest first. */
  names: readonly string[];
}
