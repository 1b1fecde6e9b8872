// The commit statuses the GitOps loop sets (context `kangal-patch/<cluster>`): on a loaded commit
// once its sync is complete (success, or failure naming its invalid files), and on a commit refused
// before loading; once per commit (a failed write is logged, and tried again when that commit is
// synced or refused again).
import { formatSourceProblem } from '../core/gitops/sync-plan.js';
import type { ForgePort } from '../forge/port.js';
import type { OpContext } from '../runtime/context.js';
import type { Logger } from '../telemetry/logger.js';
import type { SyncReport } from './sync/index.js';

/**
 * Remembers which commits got their status, so each commit gets one, however often it is synced
 * again (drift, triggers, deferred refreshes). Without a forge it sets none.
 */
export class CommitStatuses {
  private readonly sent = new Set<string>();

  constructor(
    private readonly target: { forge: ForgePort; context: string } | undefined,
    private readonly log: Logger,
  ) {}

  /** After a sync that applied all it could: its commit's status says whether every plan file was valid. */
  async synced(ctx: OpContext, report: SyncReport): Promise<void> {
    const cs = this.target;
    if (!cs || this.sent.has(report.commit) || report.failed.length > 0 || report.deferred.length > 0) return;
    const ok = report.problems.length === 0;
    const summary = report.problems.map(formatSourceProblem).join('; ');
    const description = ok ? `${report.plans.length} plan(s) valid and applied` : summary;
    await this.set(ctx, report.commit, ok ? 'success' : 'failure', description);
  }

  /** The commit status of a loaded or refused commit, once per commit. */
  async set(ctx: OpContext, commit: string, verdict: 'success' | 'failure', description: string): Promise<void> {
    const cs = this.target;
    if (!cs || this.sent.has(commit)) return;
    try {
      await cs.forge.setCommitStatus(ctx, commit, {
        state: verdict,
        context: cs.context,
        description: description.length > 140 ? `${description.slice(0, 139)}…` : description,
      });
      this.sent.add(commit);
    } catch (err) {
      this.log.warn(
        { commit, err: err instanceof Error ? err.message : String(err) },
        'could not set the commit status',
      );
    }
  }
}
