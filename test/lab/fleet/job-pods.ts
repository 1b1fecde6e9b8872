// Pods of batch Jobs on the simulated fleet, doing what kube-scheduler and the kubelet would: an
// unscheduled Job pod is bound (Binding subresource) to an up, schedulable node it tolerates, runs,
// and terminates with the exit code its container's shell command asks for (`sh -c 'sleep 0.5; exit 3'`:
// sleeps, then exits 3; no `exit`: 0), reported in containerStatuses[].state.terminated as a kubelet
// does. The real Job controller (kube-controller-manager) creates the pods and drives the Job to
// Complete or Failed. Every run is recorded for tests.
import { CoreV1Api, Watch, type KubeConfig, type V1Node, type V1Pod } from '@kubernetes/client-node';
import { apiStatus, mergePatch } from '../kube.js';
import { SIMULATED_LABEL } from './objects.js';
import type { FleetControl } from './types.js';

export const JOB_NAME_LABEL = 'batch.kubernetes.io/job-name';

export interface JobPodRun {
  namespace: string;
  pod: string;
  job: string;
  node: string;
  /** Environment of the first container (plain values only). */
  env: Record<string, string>;
  exitCode: number;
  startedAt: number;
  finishedAt?: number;
}

/** What a container's command line asks for: `sleep N` seconds, then `exit N`. */
export function scriptOf(command: readonly string[]): { sleepMs: number; exitCode: number } {
  const text = command.join(' ');
  const sleep = /\bsleep\s+(\d+(?:\.\d+)?)/.exec(text);
  const exit = /\bexit\s+(\d+)/.exec(text);
  return { sleepMs: sleep ? Math.round(Number(sleep[1]) * 1000) : 0, exitCode: exit ? Number(exit[1]) : 0 };
}

export class JobPods {
  private readonly core: CoreV1Api;
  private readonly watch: Watch;
  private abort: AbortController | undefined;
  private stopped = false;
  private readonly timers = new Set<NodeJS.Timeout>();
  /** Pod UIDs already bound or started, so a repeated watch event acts once. */
  private readonly handled = new Set<string>();
  readonly runs: JobPodRun[] = [];
  readonly errors: string[] = [];

  constructor(kc: KubeConfig, private readonly fleet: FleetControl) {
    this.core = kc.makeApiClient(CoreV1Api);
    this.watch = new Watch(kc);
  }

  async start(): Promise<void> {
    if (this.stopped) return;
    this.abort = await this.watch.watch('/api/v1/pods', { labelSelector: JOB_NAME_LABEL }, (type, obj) => this.onPod(type, obj as V1Pod), () => {
      if (!this.stopped) this.after(200, 'restart the Job pod watch', () => this.start());
    });
  }

  /** Runs of the Job's pods, in start order. */
  runsOf(job: string): JobPodRun[] {
    return this.runs.filter((r) => r.job === job);
  }

  stop(): void {
    this.stopped = true;
    for (const t of this.timers) clearTimeout(t);
    this.abort?.abort();
  }

  private onPod(type: string, pod: V1Pod): void {
    if (type === 'DELETED') return;
    const md = pod.metadata ?? {};
    const uid = md.uid ?? '';
    if (md.deletionTimestamp) {
      this.background(`finish deletion of ${md.namespace ?? ''}/${md.name ?? ''}`, () => this.finishDeletion(pod));
      return;
    }
    const phase = pod.status?.phase ?? 'Pending';
    if (phase !== 'Pending') return;
    if (!pod.spec?.nodeName) {
      if (this.handled.has(`bind:${uid}`)) return;
      this.handled.add(`bind:${uid}`);
      this.background(`bind ${md.namespace ?? ''}/${md.name ?? ''}`, () => this.bind(pod));
    } else if (this.fleet.node(pod.spec.nodeName) && !this.handled.has(`run:${uid}`)) {
      // Only pods on this fleet's nodes: suites sharing a cluster each run a fleet.
      this.handled.add(`run:${uid}`);
      this.background(`run ${md.namespace ?? ''}/${md.name ?? ''}`, () => this.run(pod));
    }
  }

  /** kube-scheduler's part: the up, schedulable node with the fewest Job pods that the pod tolerates and selects. */
  private async bind(pod: V1Pod): Promise<void> {
    const nodes = (await this.core.listNode({ labelSelector: `${SIMULATED_LABEL}=true` })).items.filter((n) => this.fits(pod, n));
    if (nodes.length === 0) {
      // As kube-scheduler's unschedulable queue: try again shortly (nodes come back, get uncordoned).
      this.after(250, `bind ${pod.metadata?.namespace ?? ''}/${pod.metadata?.name ?? ''} again`, () => this.bind(pod));
      return;
    }
    const load = (n: string): number => this.runs.filter((r) => r.node === n && r.finishedAt === undefined).length;
    const [node] = nodes.map((n) => n.metadata?.name ?? '').sort((a, b) => load(a) - load(b) || a.localeCompare(b));
    const { namespace = '', name = '' } = pod.metadata ?? {};
    await this.core.createNamespacedPodBinding({ namespace, name, body: { metadata: { name }, target: { kind: 'Node', name: node } } }).catch((err: unknown) => {
      // Bound already (another fleet on the same cluster was first).
      if (apiStatus(err) !== 409) throw err;
    });
  }

  private fits(pod: V1Pod, node: V1Node): boolean {
    const name = node.metadata?.name ?? '';
    if (!this.fleet.node(name)?.up || node.spec?.unschedulable) return false;
    const selector = pod.spec?.nodeSelector ?? {};
    if (!Object.entries(selector).every(([k, v]) => node.metadata?.labels?.[k] === v)) return false;
    const tolerations = pod.spec?.tolerations ?? [];
    return (node.spec?.taints ?? [])
      .filter((t) => t.effect === 'NoSchedule' || t.effect === 'NoExecute')
      .every((t) => tolerations.some((x) => (x.operator === 'Exists' && (x.key === undefined || x.key === t.key)) || (x.key === t.key && x.value === t.value)));
  }

  /** The kubelet's part: Running, then terminated with the script's exit code. */
  private async run(pod: V1Pod): Promise<void> {
    const { namespace = '', name = '', labels = {} } = pod.metadata ?? {};
    const container = pod.spec?.containers[0];
    const script = scriptOf([...(container?.command ?? []), ...(container?.args ?? [])]);
    const env = Object.fromEntries((container?.env ?? []).filter((e) => e.value !== undefined).map((e) => [e.name, e.value ?? '']));
    const record: JobPodRun = { namespace, pod: name, job: labels[JOB_NAME_LABEL] ?? '', node: pod.spec?.nodeName ?? '', env, exitCode: script.exitCode, startedAt: Date.now() };
    this.runs.push(record);
    const started = new Date();
    const containers = pod.spec?.containers ?? [];
    await this.patchStatus(namespace, name, {
      phase: 'Running',
      startTime: started,
      conditions: [{ type: 'PodScheduled', status: 'True', lastTransitionTime: started }, { type: 'Ready', status: 'True', lastTransitionTime: started }],
      containerStatuses: containers.map((c) => ({ name: c.name, image: c.image ?? '', imageID: '', ready: true, started: true, restartCount: 0, state: { running: { startedAt: started } } })),
    });
    this.after(script.sleepMs, `finish ${namespace}/${name}`, async () => {
      const finished = new Date();
      record.finishedAt = finished.getTime();
      const code = script.exitCode;
      await this.patchStatus(namespace, name, {
        phase: code === 0 ? 'Succeeded' : 'Failed',
        conditions: [{ type: 'PodScheduled', status: 'True', lastTransitionTime: started }, { type: 'Ready', status: 'False', reason: 'PodCompleted', lastTransitionTime: finished }],
        containerStatuses: containers.map((c) => ({
          name: c.name, image: c.image ?? '', imageID: '', ready: false, started: false, restartCount: 0,
          state: { terminated: { exitCode: code, reason: code === 0 ? 'Completed' : 'Error', startedAt: started, finishedAt: finished } },
        })),
      });
    });
  }

  private async patchStatus(namespace: string, name: string, status: NonNullable<V1Pod['status']>): Promise<void> {
    await this.core.patchNamespacedPodStatus({ namespace, name, body: { status } }, mergePatch).catch((err: unknown) => {
      if (apiStatus(err) !== 404) throw err;
    });
  }

  private async finishDeletion(pod: V1Pod): Promise<void> {
    const { namespace = '', name = '', uid } = pod.metadata ?? {};
    await this.core.deleteNamespacedPod({ namespace, name, body: { gracePeriodSeconds: 0, preconditions: { uid } } }).catch((err: unknown) => {
      if (apiStatus(err) !== 404 && apiStatus(err) !== 409) throw err;
    });
  }

  private after(ms: number, what: string, work: () => Promise<void>): void {
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      this.background(what, work);
    }, ms);
    this.timers.add(timer);
  }

  private background(what: string, work: () => Promise<void>): void {
    if (this.stopped) return;
    work().catch((err: unknown) => {
      if (!this.stopped) this.errors.push(`${what}: ${err instanceof Error ? err.message : String(err)}`);
    });
  }
}
