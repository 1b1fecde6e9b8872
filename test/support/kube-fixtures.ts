// Objects for the controller/kube integration tests, written with client-node directly (test code
// may use it; the product's own client code is controller/kube).
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import {
  CoreV1Api,
  CustomObjectsApi,
  PolicyV1Api,
  CoordinationV1Api,
  type KubeConfig,
  type V1Node,
  type V1Pod,
} from '@kubernetes/client-node';
import type { LabCluster } from '../lab/cluster/index.js';
import { loadKubeConfig, mergePatch } from '../lab/kube.js';
import { systemClock } from '../../controller/runtime/clock.js';
import { rootContext, type OpContext } from '../../controller/runtime/context.js';

const run = promisify(execFile);

export interface KubeFixture {
  cluster: LabCluster;
  kc: KubeConfig;
  core: CoreV1Api;
  policy: PolicyV1Api;
  coordination: CoordinationV1Api;
  custom: CustomObjectsApi;
}

export function kubeFixture(cluster: LabCluster): KubeFixture {
  const kc = loadKubeConfig(cluster.kubeconfigPath);
  return {
    cluster,
    kc,
    core: kc.makeApiClient(CoreV1Api),
    policy: kc.makeApiClient(PolicyV1Api),
    coordination: kc.makeApiClient(CoordinationV1Api),
    custom: kc.makeApiClient(CustomObjectsApi),
  };
}

/** A context for one test call: aborted by nothing, 30 s deadline. */
export function testCtx(signal: AbortSignal = new AbortController().signal): OpContext {
  return rootContext(systemClock, signal, 30_000);
}

let crdsApplied: Promise<void> | undefined;

/** kubectl apply -k kustomize/crd, once per run, and wait until the CRDs are Established. */
export function applyCrds(cluster: LabCluster): Promise<void> {
  crdsApplied ??= (async () => {
    const kubectl = (args: string[]) => run(cluster.kubectl, ['--kubeconfig', cluster.kubeconfigPath, ...args]);
    await kubectl(['apply', '-k', 'kustomize/crd']);
    await kubectl([
      'wait',
      '--for=condition=Established',
      '--timeout=60s',
      'crd/patchplans.kangalpatch.ozalp.dk',
      'crd/patchjobs.kangalpatch.ozalp.dk',
    ]);
  })();
  return crdsApplied;
}

export async function ensureNamespace(f: KubeFixture, name: string): Promise<void> {
  try {
    await f.core.createNamespace({ body: { metadata: { name } } });
  } catch (err) {
    if ((err as { code?: number }).code !== 409) throw err;
  }
}

export interface TestNodeOptions {
  talosVersion?: string;
  ready?: boolean;
  internalIP?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

/** A Node with the status a Talos kubelet would post. */
export async function createNode(f: KubeFixture, name: string, o: TestNodeOptions = {}): Promise<V1Node> {
  await f.core.createNode({
    body: { metadata: { name, labels: { test: 'kube', ...o.labels }, annotations: o.annotations ?? {} } },
  });
  const now = new Date();
  const status = {
    addresses: [
      { type: 'Hostname', address: name },
      { type: 'InternalIP', address: o.internalIP ?? '10.5.0.2' },
    ],
    nodeInfo: {
      osImage: `Talos (${o.talosVersion ?? 'v1.12.3'})`,
      kubeletVersion: 'v1.34.1',
      bootID: `boot-${name}`,
      machineID: 'm',
      systemUUID: 'u',
      kernelVersion: '6.12',
      containerRuntimeVersion: 'containerd://2.1',
      kubeProxyVersion: '',
      operatingSystem: 'linux',
      architecture: 'amd64',
    },
    conditions: [
      {
        type: 'Ready',
        status: o.ready === false ? 'False' : 'True',
        reason: 'KubeletReady',
        lastHeartbeatTime: now,
        lastTransitionTime: now,
      },
    ],
  };
  return f.core.patchNodeStatus({ name, body: { status } }, mergePatch);
}

export async function deleteNode(f: KubeFixture, name: string): Promise<void> {
  await f.core.deleteNode({ name }).catch(() => undefined);
}

/**
 * A pod with no node (so deletion needs no kubelet and is immediate), marked Running and Ready so
 * the disruption controller counts it as healthy.
 */
export async function createReadyPod(
  f: KubeFixture,
  namespace: string,
  name: string,
  labels: Record<string, string>,
): Promise<V1Pod> {
  await f.core.createNamespacedPod({
    namespace,
    body: { metadata: { name, labels }, spec: { containers: [{ name: 'app', image: 'registry.k8s.io/pause:3.10' }] } },
  });
  const now = new Date();
  return f.core.patchNamespacedPodStatus(
    {
      namespace,
      name,
      body: {
        status: {
          phase: 'Running',
          conditions: [
            { type: 'Ready', status: 'True', lastTransitionTime: now },
            { type: 'ContainersReady', status: 'True', lastTransitionTime: now },
          ],
        },
      },
    },
    mergePatch,
  );
}
