// The `kube-system/kube-proxy` DaemonSet of a Talos cluster, with the lab playing the daemonset
// controller (none runs here: see cluster/index.ts CONTROLLERS): one pod per node, owned by the
// DaemonSet and labelled like it, a RollingUpdate with maxUnavailable 1 when the template image
// changes (old pod deleted, new pod created, next node once it is Ready), and the status the
// controller writes, so `observedGeneration == generation && updatedNumberScheduled ==
// desiredNumberScheduled && numberAvailable == desiredNumberScheduled` holds only once a rollout is done.
import { createHash } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { AppsV1Api, CoreV1Api, type KubeConfig, type V1DaemonSet, type V1Pod } from '@kubernetes/client-node';
import { apiStatus, mergePatch } from '../kube.js';
import { podStatus, SIMULATED_LABEL } from './objects.js';
import type { FleetControl } from './types.js';

export const KUBE_PROXY = { namespace: 'kube-system', name: 'kube-proxy' } as const;
const APP_LABEL = { 'k8s-app': 'kube-proxy' };
const SELECTOR = 'k8s-app=kube-proxy';
const CONTAINER = 'kube-proxy';
/** The label the daemonset controller puts on each pod: which template revision it runs. */
const REVISION_LABEL = 'controller-revision-hash';
/** About a minute of retries of a failed rollout pass (200 ms doubling to 2 s). */
const ROLL_ATTEMPTS = 30;

/** The kube-proxy image a cluster of this Kubernetes version starts with (as `talosctl gen config` writes it). */
export function defaultKubeProxyImage(kubernetesVersion: string): string {
  return `registry.k8s.io/kube-proxy:${kubernetesVersion}`;
}

const revisionOf = (image: string): string => createHash('sha256').update(image).digest('hex').slice(0, 10);
const imageOf = (ds: V1DaemonSet): string => ds.spec?.template.spec?.containers[0]?.image ?? '';
const isReady = (pod: V1Pod): boolean =>
  pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;

export class KubeProxyDaemonSet {
  private readonly apps: AppsV1Api;
  private readonly core: CoreV1Api;
  private readonly abort = new AbortController();
  /** Bumped by every new template: a rollout loop of an older one stops. */
  private rolloutGen = 0;
  private rolling = false;
  private pending = false;
  private podReadyMs = 0;
  /** Status writes one at a time, each computed from live objects, so none overwrites a newer one. */
  private statusChain: Promise<void> = Promise.resolve();

  constructor(
    kc: KubeConfig,
    private readonly fleet: FleetControl,
    private readonly onError: (what: string, err: unknown) => void,
  ) {
    this.apps = kc.makeApiClient(AppsV1Api);
    this.core = kc.makeApiClient(CoreV1Api);
  }

  /** Creates the DaemonSet with one Ready pod per node that is up. */
  async create(image: string): Promise<void> {
    const ds = await this.apps
      .createNamespacedDaemonSet({ namespace: KUBE_PROXY.namespace, body: daemonSet(image) })
      .catch((err: unknown) => {
        if (apiStatus(err) === 409) {
          throw new Error(
            `${KUBE_PROXY.namespace}/${KUBE_PROXY.name} exists already: only one fleet per cluster may run kube-proxy (FleetOptions.kubeProxy)`,
            { cause: err },
          );
        }
        throw err;
      });
    for (const node of this.fleet.nodes()) await this.createPod(ds, node.name, node.up);
    await this.writeStatus();
  }

  async setImage(image: string, podReadyMs: number): Promise<void> {
    this.podReadyMs = podReadyMs;
    const ds = await this.read();
    if (!ds || imageOf(ds) === image) return;
    const containers = [{ ...ds.spec?.template.spec?.containers[0], name: CONTAINER, image }];
    await this.apps.patchNamespacedDaemonSet(
      { ...KUBE_PROXY, body: { spec: { template: { spec: { containers } } } } },
      mergePatch,
    );
    this.rolloutGen++;
    await this.writeStatus();
    this.kick();
  }

  /** A node went down or came up: readiness changed, and a node back with an old pod gets rolled. */
  nodeChanged(): void {
    this.background('kube-proxy status after a node change', () => this.writeStatus());
    this.kick();
  }

  stop(): void {
    this.abort.abort();
  }

  private kick(): void {
    this.pending = true;
    if (this.rolling || this.abort.signal.aborted) return;
    this.rolling = true;
    this.background('kube-proxy rollout', async () => {
      try {
        for (let attempt = 0; ; attempt++) {
          try {
            // A kick while a pass runs (new template, node back) asks for one more pass.
            while (this.pending) {
              this.pending = false;
              await this.roll();
            }
            return;
          } catch (err) {
            // A step failed in an apiserver or etcd restart: the DaemonSet controller tries again
            // (here for about a minute), so the rollout does not stop half done.
            if (this.abort.signal.aborted || attempt >= ROLL_ATTEMPTS) throw err;
            this.pending = true;
            await delay(Math.min(200 * 2 ** attempt, 2_000), undefined, { signal: this.abort.signal });
          }
        }
      } finally {
        this.rolling = false;
      }
    });
  }

  /** RollingUpdate, maxUnavailable 1: one up node at a time, in name order, until every up node runs the template. */
  private async roll(): Promise<void> {
    for (;;) {
      const gen = this.rolloutGen;
      const ds = await this.read();
      if (!ds || this.abort.signal.aborted) return;
      const revision = revisionOf(imageOf(ds));
      const pods = await this.pods();
      const next = this.nextNode(pods, revision);
      if (next === undefined) return;
      await this.deletePodsOn(pods, next);
      await this.writeStatus();
      const pod = await this.createPod(ds, next, false);
      await this.writeStatus();
      await delay(this.podReadyMs, undefined, { signal: this.abort.signal });
      if (gen !== this.rolloutGen && revisionOf(imageOf((await this.read()) ?? ds)) !== revision) continue; // a newer template replaces this pod anyway
      await this.setPodReady(pod, this.fleet.node(next)?.up ?? false);
      await this.writeStatus();
    }
  }

  /** The first up node, in name order, without a pod of this revision. */
  private nextNode(pods: V1Pod[], revision: string): string | undefined {
    return this.fleet
      .nodes()
      .filter((n) => n.up)
      .map((n) => n.name)
      .sort()
      .find(
        (name) => !pods.some((p) => p.spec?.nodeName === name && p.metadata?.labels?.[REVISION_LABEL] === revision),
      );
  }

  /** Deletes the node's old pods at once (a pod gone already is fine). */
  private async deletePodsOn(pods: V1Pod[], node: string): Promise<void> {
    for (const old of pods.filter((p) => p.spec?.nodeName === node)) {
      await this.core
        .deleteNamespacedPod({
          namespace: KUBE_PROXY.namespace,
          name: old.metadata?.name ?? '',
          gracePeriodSeconds: 0,
        })
        .catch((err: unknown) => {
          if (apiStatus(err) !== 404) throw err;
        });
    }
  }

  private async read(): Promise<V1DaemonSet | undefined> {
    return this.apps.readNamespacedDaemonSet(KUBE_PROXY).catch((err: unknown) => {
      if (apiStatus(err) === 404) return undefined;
      throw err;
    });
  }

  private async pods(): Promise<V1Pod[]> {
    const list = await this.core.listNamespacedPod({ namespace: KUBE_PROXY.namespace, labelSelector: SELECTOR });
    return list.items.filter((p) => !p.metadata?.deletionTimestamp);
  }

  private async createPod(ds: V1DaemonSet, nodeName: string, ready: boolean): Promise<V1Pod> {
    const image = imageOf(ds);
    const pod = await this.core.createNamespacedPod({
      namespace: KUBE_PROXY.namespace,
      body: {
        metadata: {
          generateName: `${KUBE_PROXY.name}-`,
          namespace: KUBE_PROXY.namespace,
          labels: {
            ...APP_LABEL,
            [REVISION_LABEL]: revisionOf(image),
            'pod-template-generation': String(ds.metadata?.generation ?? 1),
            [SIMULATED_LABEL]: 'true',
          },
          ownerReferences: [
            {
              apiVersion: 'apps/v1',
              kind: 'DaemonSet',
              name: KUBE_PROXY.name,
              uid: ds.metadata?.uid ?? '',
              controller: true,
              blockOwnerDeletion: true,
            },
          ],
        },
        spec: { ...ds.spec?.template.spec, containers: ds.spec?.template.spec?.containers ?? [], nodeName },
      },
    });
    return this.setPodReady(pod, ready);
  }

  private async setPodReady(pod: V1Pod, ready: boolean): Promise<V1Pod> {
    const ip = this.fleet.node(pod.spec?.nodeName ?? '')?.internalIP;
    const status = {
      ...podStatus(ready, new Date(), [{ name: CONTAINER, image: pod.spec?.containers[0]?.image ?? '' }]),
      hostIP: ip,
      podIP: ip,
    };
    return this.core.patchNamespacedPodStatus(
      { namespace: KUBE_PROXY.namespace, name: pod.metadata?.name ?? '', body: { status } },
      mergePatch,
    );
  }

  private writeStatus(): Promise<void> {
    const next = this.statusChain.then(() => this.computeAndWriteStatus());
    this.statusChain = next.catch(() => undefined);
    return next;
  }

  /** What the daemonset controller reports, counted per node from the live pods. */
  private async computeAndWriteStatus(): Promise<void> {
    const ds = await this.read();
    if (!ds) return;
    const revision = revisionOf(imageOf(ds));
    const pods = await this.pods();
    const nodes = this.fleet.nodes().map((n) => n.name);
    const on = (name: string): V1Pod[] => pods.filter((p) => p.spec?.nodeName === name);
    const count = (f: (ps: V1Pod[]) => boolean): number => nodes.filter((n) => f(on(n))).length;
    const desired = nodes.length;
    const available = count((ps) => ps.some(isReady));
    const status = {
      observedGeneration: ds.metadata?.generation ?? 1,
      desiredNumberScheduled: desired,
      currentNumberScheduled: count((ps) => ps.length > 0),
      updatedNumberScheduled: count((ps) => ps.some((p) => p.metadata?.labels?.[REVISION_LABEL] === revision)),
      numberReady: available,
      numberAvailable: available,
      numberUnavailable: desired - available,
      numberMisscheduled: 0,
    };
    await this.apps.patchNamespacedDaemonSetStatus({ ...KUBE_PROXY, body: { status } }, mergePatch);
  }

  private background(what: string, work: () => Promise<void>): void {
    work().catch((err: unknown) => {
      if (!this.abort.signal.aborted) this.onError(what, err);
    });
  }
}

function daemonSet(image: string): V1DaemonSet {
  return {
    metadata: { name: KUBE_PROXY.name, namespace: KUBE_PROXY.namespace, labels: { ...APP_LABEL, tier: 'node' } },
    spec: {
      selector: { matchLabels: APP_LABEL },
      updateStrategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 1 } },
      template: {
        metadata: { labels: { ...APP_LABEL, tier: 'node' } },
        spec: {
          containers: [
            {
              name: CONTAINER,
              image,
              command: ['/usr/local/bin/kube-proxy', '--config=/etc/kubernetes/kube-proxy/config.yaml'],
            },
          ],
          hostNetwork: true,
          priorityClassName: 'system-node-critical',
          serviceAccountName: 'kube-proxy',
          tolerations: [{ operator: 'Exists' }],
        },
      },
    },
  };
}
