// What the report loop is given: its settings from the flags, the git writer it commits with, the
// plan and job informers it reads, the forge, and how it records the report's URL on the plan.
import type { ForgePort } from '../../forge/port.js';
import type { JobView, PlanView } from '../../kube/views.js';
import type { Clock } from '../../runtime/clock.js';
import type { OpContext } from '../../runtime/context.js';
import type { Informer } from '../../runtime/informer.js';
import type { LogFn } from '../../runtime/log.js';
import type { WriteRequest, WriteResult } from '../write/index.js';
import type { ReportSigner } from '../promotion/signature.js';

interface ReporterConfig {
  /** --cluster-name: in branch names, titles, labels and paths. */
  cluster: string;
  /** --git-branch: the branch report PRs merge into. */
  baseBranch: string;
  /** Minimum time between two report commits of one plan (default 30 s; tests shorten it). */
  minIntervalMs?: number;
  /** Web prefix for links to the plan file at its commit (`https://github.com/o/r/blob`); no link when unset. */
  blobUrlBase?: string;
  /** Labels of report PRs (default `kangal-patch`, `kangal-patch/report`, `cluster/<cluster>`). */
  labels?: string[];
  /** Backoff of failed passes (forge or git down). */
  backoff?: { initialMs: number; maxMs: number };
  /** How often the branch of a finished plan's open PR is checked again (default RECHECK_MS; tests shorten it). */
  recheckMs?: number;
  /** Signs the YAML twin (status/<cluster>/<plan>.sig beside it): promotion evidence for downstream clusters. */
  signer?: ReportSigner | undefined;
}

/** What the reporter (and auto-update's proposer, which commits with the same writer) needs from the git writer (BranchWriter implements it). */
export interface ReportWriter {
  write(ctx: OpContext, req: WriteRequest): Promise<WriteResult>;
  /** Of `paths`, those the branch holds exactly as the base does (BranchWriter.sameOnBase). */
  sameOnBase?(ctx: OpContext, branch: string, base: string, paths: readonly string[]): Promise<string[]>;
}

export interface ReporterDeps {
  config: ReporterConfig;
  patchPlans: Informer<PlanView>;
  patchJobs: Informer<JobView>;
  forge: ForgePort;
  writer: ReportWriter;
  clock: Clock;
  log: LogFn;
  /** Records the report pull request's URL on the plan (REPORT_URL_ANNOTATION), for `kangal-patch status`; undefined: not recorded. */
  annotatePlan?: (ctx: OpContext, plan: string, key: string, value: string) => Promise<void>;
}
