// What a PatchJob decision sees (JobObservation, controller/core/job), built for the core's unit tests.
// Defaults: job plan-w1 of plan `plan` (group workers) taking worker w1 to Talos v1.13.2, at JOB_T0
// (2026-12-01T10:00Z); the Node Ready, schedulable, on boot BOOT with Talos v1.12.4, a factory schematic
// and kubelet v1.35.4; no pods, Leases or Talos facts: each test passes what its pass reads as an override.
import {
  patchJobSpec,
  type PatchJobSpec,
  type PatchJobSpecInput,
  type PatchJobStatus,
} from '../../schemas/patchjob.js';
import { jobName } from '../../controller/core/plan/names.js';
import type { JobNodeFacts, JobObservation, JobPodFacts, TalosIdentity } from '../../controller/core/job/index.js';

export const JOB_T0 = Date.parse('2026-12-01T10:00:00Z');
export const BOOT = 'boot-1';

/** A PatchJob spec as the plan writes it: w1 of plan `plan`, group workers, Talos v1.13.2, secret `talos`. */
export function jobSpec(over: Partial<PatchJobSpecInput> = {}): PatchJobSpec {
  return patchJobSpec.parse({
    nodeName: 'w1',
    patchPlanRef: 'plan',
    group: 'workers',
    target: { talosVersion: 'v1.13.2' },
    talosConfig: { secretRef: { name: 'talos' } },
    ...over,
  });
}

/** The job's Node: worker w1, Ready and schedulable, on BOOT with Talos v1.12.4 and kubelet v1.35.4. */
export function jobNode(over: Partial<JobNodeFacts> = {}): JobNodeFacts {
  return {
    name: 'w1',
    internalIP: '127.0.10.1',
    ready: true,
    unschedulable: false,
    cordonedBy: undefined,
    bootID: BOOT,
    talosVersion: 'v1.12.4',
    schematic: 'a'.repeat(64),
    controlPlane: false,
    kubeletVersion: 'v1.35.4',
    ...over,
  };
}

/** What Talos answered: v1.12.4 running on BOOT, no schematic read. */
export function talosFacts(over: Partial<TalosIdentity> = {}): TalosIdentity {
  return { ok: true, version: 'v1.12.4', bootId: BOOT, stage: 'running', schematic: undefined, ...over };
}

/** A running pod on the node, in namespace app, owned by a ReplicaSet. */
export function jobPod(name: string, over: Partial<JobPodFacts> = {}): JobPodFacts {
  return {
    namespace: 'app',
    name,
    uid: `uid-${name}`,
    controllerKind: 'ReplicaSet',
    mirror: false,
    deleting: false,
    phase: 'Running',
    ...over,
  };
}

/** The PatchJob itself: its spec (default jobSpec()) and, when a test needs it, its uid. */
interface JobOptions {
  spec?: PatchJobSpec;
  uid?: string;
}

/** One pass's observation of a job in `status`; the job is named as its plan names it (plan-w1 by default). */
export function jobObservation(
  status: PatchJobStatus,
  over: Partial<JobObservation> = {},
  job: JobOptions = {},
): JobObservation {
  const spec = job.spec ?? jobSpec();
  return {
    now: JOB_T0,
    job: {
      name: jobName(spec.patchPlanRef, spec.nodeName),
      spec,
      status,
      ...(job.uid === undefined ? {} : { uid: job.uid }),
    },
    node: jobNode(),
    pods: [],
    leases: [],
    talos: undefined,
    ...over,
  };
}
