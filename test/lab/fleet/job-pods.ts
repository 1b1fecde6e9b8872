// Pods of batch Jobs on the simulated fleet, doing what kube-scheduler and the kubelet would: an
// unscheduled Job pod is bound (Binding subresource) to an up, schedulable node it tolerates, runs,
// and terminates with the exit code its container's shell command asks for (`sh -c 'sleep 0.5; exit 3'`:
// sleeps, then exits 3; no `exit`: 0), reported in containerStatuses[].state.terminated as a kubelet
// does. The real Job controller (kube-controller-manager) creates the pods and drives the Job to
// Complete or Failed. Every run is recorded for tests.
import {
  CoreV1Api,
  Watch,
  type KubeConfig,
  type V1ContainerState,
  type V1Node,
  type V1Pod,
} from '@kubernetes/client-node';
import { apiStatus, mergePatch } from '../kube.js';
import { SIMULATED_LABEL } from './objects.js';
import type { FleetControl } from './types.js';
import { Background } from './background.js';

const JOB_NAME_LABEL = 'batch.kubernetes.io/job-name';

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
function scriptOf(command: readonly string[]): { sleepMs: number; exitCode: number } {
  const text = command.join(' ');
  const sleep = /\bsleep\s+(\d+(?:\.\d+)?)/.exec(text);
  const exit = /\bexit\s+(\d+)/.exec(text);
  return { sleepMs: sleep ? Math.round(Number(sleep[1]) * 1000) : 0, exitCode: exit ? Number(exit[1]) : 0 };
}

/** What the binder and runner read of a pod (watch events may lack any field). */
function refOf(pod: V1Pod): {
  namespace: string;
  name: string;
  uid: string;
  job: string;
  nodeName: string;
  phase: string;
  deleting: boolean;
} {
  const md = pod.metadata ?? {};
  return {
    namespace: md.namespace ?? '',
    name: md.name ?? '',
    uid: md.uid ?? '',
    job: md.labels?.[JOB_NAME_LABEL] ?? '',
    nodeName: pod.spec?.nodeName ?? '',
    phase: pod.status?.phase ?? 'Pending',
    deleting: md.deletionTimestamp !== undefined && md.deletionTimestamp !== null,
  };
}

export class JobPods {
  private readonly core: CoreV1Api;
  private readonly watch: Watch;
  private abort: AbortController | undefined;
  private readonly work = new Background();
  /** Pod UIDs already bound or started, so a repeated watch event acts once. */
  private readonly handled = new Set<string>();
  readonly runs: JobPodRun[] = [];
  readonly errors: string[] = this.work.errors;

  constructor(
    kc: KubeConfig,
    private readonly fleet: FleetControl,
  ) {
    this.core = kc.makeApiClient(CoreV1Api);
    this.watch = new Watch(kc);
  }

  async start(): Promise<void> {
    if (this.work.stopped) return;
    this.abort = await this.watch.watch(
      '/api/v1/pods',
      { labelSelector: JOB_NAME_LABEL },
      (type, obj) => this.onPod(type, obj as V1Pod),
      () => {
        if (!this.work.stopped) this.work.after(200, 'restart the Job pod watch', () => this.start());
      },
    );
  }

  /** Runs of the Job's pods, in start order. */
  runsOf(job: string): JobPodRun[] {
    return this.runs.filter((r) => r.job === job);
  }

  stop(): void {
    this.work.stop();
    this.abort?.abort();
  }

  private onPod(type: string, pod: V1Pod): void {
    if (type === 'DELETED') return;
    const p = refOf(pod);
    const what = `${p.namespace}/${p.name}`;
    if (p.deleting) this.work.retry(`finish deletion of ${what}`, () => this.finishDeletion(pod));
    else if (p.phase !== 'Pending') return;
    else if (p.nodeName === '') this.once(`bind:${p.uid}`, `bind ${what}`, () => this.bind(pod));
    // Only pods on this fleet's nodes: suites sharing a cluster each run a fleet.
    else if (this.fleet.node(p.nodeName)) this.once(`run:${p.uid}`, `run ${what}`, () => this.run(pod));
  }

  /** A repeated watch event (a restarted watch replays every pod) acts once. */
  private once(key: string, what: string, work: () => Promise<void>): void {
    if (this.handled.has(key)) return;
    this.handled.add(key);
    this.work.run(what, work);
  }

  /** kube-scheduler's part: the up, schedulable node with the fewest Job pods that the pod tolerates and selects. */
  private async bind(pod: V1Pod): Promise<void> {
    const nodes = (await this.core.listNode({ labelSelector: `${SIMULATED_LABEL}=true` })).items.filter((n) =>
      this.fits(pod, n),
    );
    if (nodes.length === 0) {
      // As kube-scheduler's unschedulable queue: try again shortly (nodes come back, get uncordoned).
      this.work.after(250, `bind ${pod.metadata?.namespace ?? ''}/${pod.metadata?.name ?? ''} again`, () =>
        this.bind(pod),
      );
      return;
    }
    const load = (n: string): number => this.runs.filter((r) => r.node === n && r.finishedAt === undefined).length;
    const [node] = nodes.map((n) => n.metadata?.name ?? '').sort((a, b) => load(a) - load(b) || a.localeCompare(b));
    const { namespace = '', name = '' } = pod.metadata ?? {};
    await this.core
      .createNamespacedPodBinding({
        namespace,
        name,
        body: { metadata: { name }, target: { kind: 'Node', name: node } },
      })
      .catch((err: unknown) => {
        // Bound already (another fleet on the same cluster was first).
        if (apiStatus(err) !== 409) throw err;
      });
  }

  private fits(pod: V1Pod, node: V1Node): boolean {
    const name = node.metadata?.name ?? '';
    if (!this.fleet.node(name)?.up || node.spec?.unschedulable) return false;
    return selects(pod, node) && toleratesTaints(pod, node);
  }

  /** The kubelet's part: Running, then terminated with the script's exit code. */
  private async run(pod: V1Pod): Promise<void> {
    const { namespace, name, job, nodeName: node } = refOf(pod);
    const containers = pod.spec?.containers ?? [];
    const first = containers[0];
    const script = scriptOf([...(first?.command ?? []), ...(first?.args ?? [])]);
    const env = Object.fromEntries(
      (first?.env ?? []).flatMap((e) => (e.value === undefined ? [] : [[e.name, e.value]])),
    );
    const record: JobPodRun = {
      namespace,
      pod: name,
      job,
      node,
      env,
      exitCode: script.exitCode,
      startedAt: Date.now(),
    };
    this.runs.push(record);
    const started = new Date();
    const statuses = (ready: boolean, state: V1ContainerState) =>
      containers.map((c) => ({
        name: c.name,
        image: c.image ?? '',
        imageID: '',
        ready,
        started: ready,
        restartCount: 0,
        state,
      }));
    const scheduled = { type: 'PodScheduled', status: 'True', lastTransitionTime: started };
    await this.patchStatus(namespace, name, {
      phase: 'Running',
      startTime: started,
      conditions: [scheduled, { type: 'Ready', status: 'True', lastTransitionTime: started }],
      containerStatuses: statuses(true, { running: { startedAt: started } }),
    });
    this.work.after(script.sleepMs, `finish ${namespace}/${name}`, () => {
      const finished = new Date();
      record.finishedAt = finished.getTime();
      const code = script.exitCode;
      // The container's end is reported until the apiserver takes it (a restart must not leave the pod Running).
      this.work.retry(`report the end of ${namespace}/${name}`, () =>
        this.patchStatus(namespace, name, {
          phase: code === 0 ? 'Succeeded' : 'Failed',
          conditions: [
            scheduled,
            { type: 'Ready', status: 'False', reason: 'PodCompleted', lastTransitionTime: finished },
          ],
          containerStatuses: statuses(false, {
            terminated: {
              exitCode: code,
              reason: code === 0 ? 'Completed' : 'Error',
              startedAt: started,
              finishedAt: finished,
            },
          }),
        }),
      );
      return Promise.resolve();
    });
  }

  private async patchStatus(namespace: string, name: string, status: NonNullable<V1Pod['status']>): Promise<void> {
    await this.core
      .patchNamespacedPodStatus({ namespace, name, body: { status } }, mergePatch)
      .catch((err: unknown) => {
        if (apiStatus(err) !== 404) throw err;
      });
  }

  private async finishDeletion(pod: V1Pod): Promise<void> {
    const { namespace = '', name = '', uid } = pod.metadata ?? {};
    await this.core
      .deleteNamespacedPod({ namespace, name, body: { gracePeriodSeconds: 0, preconditions: { uid } } })
      .catch((err: unknown) => {
        if (apiStatus(err) !== 404 && apiStatus(err) !== 409) throw err;
      });
  }
}

/** The pod's nodeSelector matches the node's labels. */
function selects(pod: V1Pod, node: V1Node): boolean {
  const selector = pod.spec?.nodeSelector ?? {};
  return Object.entries(selector).every(([k, v]) => node.metadata?.labels?.[k] === v);
}

/** The pod tolerates every NoSchedule and NoExecute taint of the node. */
function toleratesTaints(pod: V1Pod, node: V1Node): boolean {
  const tolerations = pod.spec?.tolerations ?? [];
  return (node.spec?.taints ?? [])
    .filter((t) => t.effect === 'NoSchedule' || t.effect === 'NoExecute')
    .every((t) =>
      tolerations.some(
        (x) =>
          (x.operator === 'Exists' && (x.key === undefined || x.key === t.key)) ||
          (x.key === t.key && x.value === t.value),
      ),
    );
}
