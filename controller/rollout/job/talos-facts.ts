// What the job's guards need from Talos in one pass: version, boot ID and machine stage.
//
// Three calls cannot be one snapshot, and each is retried while the node does not answer, so the
// node may reboot between them. The stage is read first, and the boot ID after it: a reboot that
// falls between the two then shows as a new boot ID, and one that had not begun shows in the stage
// (upgrading, rebooting). Read the other way round, the boot ID could come from the old boot while
// the stage, retried across the reboot, already said `running` again: "same boot, not busy", and the
// upgrade guard would call Upgrade a second time (chaos seed 4291).
//
// Starting (and in Pending), a factory installer the plan leaves to the node takes the node's platform (from the
// Version the identity read carries) and its Secure Boot state (one SecurityState read).
import type { TalosFacts } from '../../core/job/index.js';
import { detectionFor } from '../../core/installer.js';
import type { JobView, NodeView } from '../../kube/views.js';
import type { OpContext } from '../../runtime/context.js';
import type { TalosPort } from '../../talos/port.js';
import { callFailure } from '../failure.js';

type JobSpecAndStatus = { spec: NonNullable<JobView['spec']>; status: JobView['status'] };

/** A Pending job with a factory installer and no schematicID reads the node's schematic. */
function wantsSchematic(job: JobSpecAndStatus): boolean {
  return (
    job.status.phase === 'Pending' && job.spec.target.source === 'factory' && job.spec.target.schematicID === undefined
  );
}

/** The first pass (no phase yet) records the node's identity and installer, as a Pending one does again after a new boot. */
function isStarting(job: JobSpecAndStatus): boolean {
  return job.status.phase === undefined || job.status.phase === 'Pending';
}

export async function talosFacts(
  ctx: OpContext,
  job: JobSpecAndStatus,
  node: Pick<NodeView, 'name' | 'internalIP' | 'schematic' | 'installerAnnotations'>,
  talos: () => Promise<TalosPort>,
): Promise<TalosFacts> {
  const target = node.internalIP ?? node.name;
  try {
    const port = await talos();
    const stage = (await port.machineStatus(ctx, target)).stage;
    const identity = await port.identity(ctx, target);
    const schematic = wantsSchematic(job)
      ? ((await port.schematic(ctx, target)).schematic ?? node.schematic)
      : undefined;
    const detect = isStarting(job) ? detectionFor(job.spec.target, node.installerAnnotations) : undefined;
    if (detect === undefined || (!detect.platform && !detect.secureBoot))
      return { ok: true, version: identity.tag, bootId: identity.bootId, stage, schematic };
    const secureBoot = detect.secureBoot ? await port.secureBoot(ctx, target) : undefined;
    return {
      ok: true,
      version: identity.tag,
      bootId: identity.bootId,
      stage,
      schematic,
      detected: { platform: detect.platform ? identity.platform : undefined, secureBoot },
    };
  } catch (err) {
    if (ctx.signal.aborted) throw err;
    return { ok: false, failure: callFailure(err) };
  }
}
