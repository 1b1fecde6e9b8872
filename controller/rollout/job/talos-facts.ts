// What the job's guards need from Talos in one pass: version, boot ID and machine stage.
//
// Three calls cannot be one snapshot, and each is retried while the node does not answer, so the
// node may reboot between them. The stage is read first, and the boot ID after it: a reboot that
// falls between the two then shows as a new boot ID, and one that had not begun shows in the stage
// (upgrading, rebooting). Read the other way round, the boot ID could come from the old boot while
// the stage, retried across the reboot, already said `running` again: "same boot, not busy", and the
// upgrade guard would call Upgrade a second time (chaos seed 4291).
import type { TalosFacts } from '../../core/job/index.js';
import type { JobView, NodeView } from '../../kube/views.js';
import type { OpContext } from '../../runtime/context.js';
import type { TalosPort } from '../../talos/port.js';
import { callFailure } from '../failure.js';

export async function talosFacts(ctx: OpContext, job: { spec: NonNullable<JobView['spec']>; status: JobView['status'] }, node: Pick<NodeView, 'name' | 'internalIP' | 'schematic'>, talos: () => Promise<TalosPort>): Promise<TalosFacts> {
  const target = node.internalIP ?? node.name;
  try {
    const port = await talos();
    const stage = (await port.machineStatus(ctx, target)).stage;
    const identity = await port.identity(ctx, target);
    const wantsSchematic = job.status.phase === 'Pending' && job.spec.target.source === 'factory' && job.spec.target.schematicID === undefined;
    const schematic = wantsSchematic ? ((await port.schematic(ctx, target)).schematic ?? node.schematic) : undefined;
    return { ok: true, version: identity.tag, bootId: identity.bootId, stage, schematic };
  } catch (err) {
    if (ctx.signal.aborted) throw err;
    return { ok: false, failure: callFailure(err) };
  }
}
