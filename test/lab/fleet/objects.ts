// Manifests of the simulated fleet: what a Talos node's kubelet would register and report.
import type { V1Node, V1NodeCondition, V1NodeStatus, V1Pod, V1PodStatus } from '@kubernetes/client-node';
import type { FleetNodeSpec, FleetNodeState } from './types.js';

export const SIMULATED_LABEL = 'lab.kangalpatch.io/simulated';
export const WORKLOAD_LABEL = 'lab.kangalpatch.io/workload';
export const SCHEMATIC_ANNOTATION = 'extensions.talos.dev/schematic';
const CONTROL_PLANE_LABEL = 'node-role.kubernetes.io/control-plane';

export function nodeManifest(spec: FleetNodeSpec): V1Node {
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name: spec.name,
      labels: {
        'kubernetes.io/hostname': spec.name,
        'kubernetes.io/os': 'linux',
        'kubernetes.io/arch': 'amd64',
        ...(spec.role === 'controlplane' ? { [CONTROL_PLANE_LABEL]: '' } : {}),
        [SIMULATED_LABEL]: 'true',
        ...spec.labels,
      },
      annotations: { [SCHEMATIC_ANNOTATION]: spec.schematic },
    },
    // Talos taints control-plane nodes unless allowSchedulingOnControlPlanes is set.
    spec: spec.role === 'controlplane' ? { taints: [{ key: CONTROL_PLANE_LABEL, effect: 'NoSchedule' }] } : {},
  };
}

function readyCondition(state: FleetNodeState, now: Date): V1NodeCondition {
  if (!state.up) {
    return {
      type: 'Ready',
      status: 'Unknown',
      reason: 'NodeStatusUnknown',
      message: 'Kubelet stopped posting node status.',
      lastHeartbeatTime: now,
      lastTransitionTime: now,
    };
  }
  if (state.kubeletStarting) {
    const message = 'container runtime status check may not have completed yet';
    return {
      type: 'Ready',
      status: 'False',
      reason: 'KubeletNotReady',
      message,
      lastHeartbeatTime: now,
      lastTransitionTime: now,
    };
  }
  return {
    type: 'Ready',
    status: 'True',
    reason: 'KubeletReady',
    message: 'kubelet is posting ready status',
    lastHeartbeatTime: now,
    lastTransitionTime: now,
  };
}

export function nodeStatus(state: FleetNodeState, now: Date): V1NodeStatus {
  const resources = { cpu: '4', memory: '8Gi', pods: '110' };
  return {
    capacity: resources,
    allocatable: resources,
    addresses: [
      { type: 'InternalIP', address: state.internalIP },
      { type: 'Hostname', address: state.name },
    ],
    daemonEndpoints: { kubeletEndpoint: { Port: 10250 } },
    nodeInfo: {
      osImage: `Talos (${state.talosVersion})`,
      kubeletVersion: state.kubernetesVersion,
      kubeProxyVersion: '',
      kernelVersion: '6.12.40-talos',
      containerRuntimeVersion: 'containerd://2.1.4',
      operatingSystem: 'linux',
      architecture: 'amd64',
      bootID: state.bootId,
      machineID: machineId(state.name),
      systemUUID: machineId(state.name),
    },
    conditions: [readyCondition(state, now)],
  };
}

/** Stable per node name, as a machine ID is stable across reboots. */
function machineId(name: string): string {
  let h = 0x811c9dc5;
  for (const c of name) h = Math.imul(h ^ c.charCodeAt(0), 0x01000193) >>> 0;
  return h.toString(16).padStart(8, '0').repeat(4);
}

export interface PodOwner {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
}

/** A workload's pod bound to a node: owned by its controller object if any; a DaemonSet's tolerates every taint. */
export interface PodManifestInput {
  namespace: string;
  workload: string;
  nodeName: string;
  owner: PodOwner | undefined;
  daemon: boolean;
}

export function podManifest({ namespace, workload, nodeName, owner, daemon }: PodManifestInput): V1Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      generateName: `${workload}-`,
      namespace,
      labels: { app: workload, [WORKLOAD_LABEL]: workload, [SIMULATED_LABEL]: 'true' },
      ownerReferences: owner ? [{ ...owner, controller: true, blockOwnerDeletion: true }] : [],
    },
    spec: {
      nodeName,
      containers: [{ name: 'app', image: 'registry.k8s.io/pause:3.10' }],
      terminationGracePeriodSeconds: 30,
      tolerations: daemon ? [{ operator: 'Exists' }] : [],
    },
  };
}

/** A running pod's status; `containers` default to the single `app` container of workload pods. */
export function podStatus(
  ready: boolean,
  now: Date,
  containers: { name: string; image: string }[] = [{ name: 'app', image: 'registry.k8s.io/pause:3.10' }],
): V1PodStatus {
  const flag = ready ? 'True' : 'False';
  return {
    phase: 'Running',
    startTime: now,
    conditions: [
      { type: 'PodScheduled', status: 'True', lastTransitionTime: now },
      { type: 'Initialized', status: 'True', lastTransitionTime: now },
      { type: 'ContainersReady', status: flag, lastTransitionTime: now },
      { type: 'Ready', status: flag, lastTransitionTime: now },
    ],
    containerStatuses: containers.map((c) => ({
      name: c.name,
      image: c.image,
      imageID: '',
      ready,
      started: ready,
      restartCount: 0,
      state: { running: { startedAt: now } },
    })),
  };
}
