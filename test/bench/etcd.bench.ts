// `npm run bench -- etcd`: what the etcd gate adds to a control-plane rollout. Three control-plane
// nodes, one Talos patch release, concurrency 1 (as most plans run their control plane), through the
// real `kangal-patch run` process, twice: with etcd members that are back within a fraction of a
// second of their node (the gate's own cost: its reads, the Lease, the forfeit), and with members
// that come back as upstream's do (first health check 5 s after the boot) and then need 3 s more
// to catch up. Prints, per node from the lab's own record, node Ready → job Completed (the wait for
// the member after the reboot), the gate before the cordon (Lease taken → gate passed), and the
// makespan of each run; the difference per node is what waiting for etcd costs.
import { startJobLab, type JobLab } from '../e2e/support/job-lab.js';
import { examplePlan, factoryImage, labPlan } from '../e2e/support/plans.js';

const FROM = 'v1.13.1';
const TARGET = 'v1.13.2';
const CP = ['cp-1', 'cp-2', 'cp-3'];
const PROFILES = [
  { name: 'members back at once', timings: { etcdHealthyMs: 80, etcdCatchUpMs: 150 } },
  {
    name: 'members as upstream (healthy 5 s after boot, caught up 3 s later)',
    timings: { etcdHealthyMs: 5_000, etcdCatchUpMs: 3_000 },
  },
];

interface Run {
  makespanS: number;
  perNode: { node: string; readyToCompletedS: number; gateS: number; waitedS: number }[];
  forfeits: number;
}

async function once(timings: { etcdHealthyMs: number; etcdCatchUpMs: number }): Promise<Run> {
  const lab: JobLab = await startJobLab({
    fleet: { nodes: 4, controlPlanes: 3, talosVersion: FROM },
    images: [factoryImage('nocloud', TARGET)],
    timings,
  });
  try {
    lab.talos.etcd.setLeader('cp-2');
    const controller = lab.startController({ args: ['--log-level', 'info'] });
    const since = Date.now();
    await lab.applyPlan({
      ...labPlan(examplePlan('controlplane-only.yaml'), lab.talos.endpoint, {
        target: { talosVersion: TARGET, source: 'factory', installer: 'nocloud' },
        groups: { controlPlane: { concurrency: 1 } },
      }),
      metadata: { name: 'bench-etcd' },
    });
    const status = await lab.waitForPlan(
      'bench-etcd',
      'Completed',
      (s) => s.phase === 'Completed' || s.phase === 'Failed',
      15 * 60_000,
    );
    await controller.stop();
    if (status.phase !== 'Completed') throw new Error(`plan ${String(status.phase)}: ${String(status.message)}`);
    const ev = lab.observer.events.filter((e) => e.at >= since);
    const start = Math.min(...ev.filter((e) => e.kind === 'leaseCreated').map((e) => e.at));
    const completed = (node: string): number =>
      ev.find((e) => e.kind === 'jobPhase' && e.node === node && e.detail.endsWith(' Completed'))?.at ?? NaN;
    const perNode = await Promise.all(
      CP.map(async (node) => {
        const cordon = ev.find((e) => e.kind === 'cordoned' && e.node === node)?.at ?? NaN;
        const ready = ev.find((e) => e.kind === 'ready' && e.node === node && e.at > cordon)?.at ?? NaN;
        const job = await lab.job(`bench-etcd-${node}`);
        const etcd = (job?.status.etcd ?? {}) as {
          leaseTime?: string;
          gatePassedTime?: string;
          waitedSeconds?: number;
        };
        return {
          node,
          readyToCompletedS: (completed(node) - ready) / 1000,
          gateS: (Date.parse(etcd.gatePassedTime ?? '') - Date.parse(etcd.leaseTime ?? '')) / 1000,
          waitedS: etcd.waitedSeconds ?? 0,
        };
      }),
    );
    const forfeits = lab.talos.etcd
      .record()
      .leaders.filter((l) => l.at >= since && / forfeited leadership$/.test(l.why)).length;
    return { makespanS: (Math.max(...CP.map(completed)) - start) / 1000, perNode, forfeits };
  } finally {
    await lab.stop();
  }
}

export async function run(): Promise<void> {
  const runs: Run[] = [];
  for (const p of PROFILES) {
    const r = await once(p.timings);
    runs.push(r);
    console.log(
      `${p.name}: makespan ${r.makespanS.toFixed(1)} s for ${CP.length} control-plane nodes, ${r.forfeits} leader forfeit(s)`,
    );
    for (const n of r.perNode) {
      console.log(
        `  ${n.node}: Lease → gate passed ${n.gateS.toFixed(2)} s; node Ready → job Completed ${n.readyToCompletedS.toFixed(1)} s; status.etcd.waitedSeconds ${n.waitedS}`,
      );
    }
  }
  const [fast, slow] = runs;
  if (fast && slow)
    console.log(
      `waiting for members as upstream's come back adds ${((slow.makespanS - fast.makespanS) / CP.length).toFixed(1)} s per control-plane node (makespan ${fast.makespanS.toFixed(1)} → ${slow.makespanS.toFixed(1)} s)`,
    );
}
