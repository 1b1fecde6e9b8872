// What the report renderer sees: a plan and its jobs as plain values (the kube views fit them).
import type { PatchJobStatus } from '../../../schemas/patchjob.js';
import type { PatchPlanStatus } from '../../../schemas/patchplan.js';

export interface ReportPlan {
  name: string;
  uid: string;
  /** strategy.order of the spec, when the spec parses (groups without status rows follow it). */
  order: readonly string[] | undefined;
  status: PatchPlanStatus;
  /** Annotations kangalpatch.ozalp.dk/spec-commit, source-commit and source-path, when the GitOps sync set them. */
  specCommit: string | undefined;
  sourceCommit: string | undefined;
  sourcePath: string | undefined;
}

export interface ReportJob {
  name: string;
  nodeName: string;
  group: string;
  status: PatchJobStatus;
  /** Versions the node ran when the job was first seen (status keeps only the current ones). */
  before: { talos: string | undefined; kubernetes: string | undefined };
  targetTalos: string | undefined;
  targetKubernetes: string | undefined;
}

export interface ReportSettings {
  cluster: string;
  /** Web URL prefix of a file at a commit, e.g. `https://github.com/acme/plans/blob`; the link is `<prefix>/<commit>/<path>`. */
  blobUrlBase: string | undefined;
}
