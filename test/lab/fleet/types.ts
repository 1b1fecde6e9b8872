// The contract between the fleet simulator (the Kubernetes side of simulated Talos nodes) and its
// users: the Talos API simulator, the lab CLI and the tests.

export type NodeRole = 'controlplane' | 'worker';

export interface FleetNodeSpec {
  name: string;
  role: NodeRole;
  /** `vX.Y.Z` */
  talosVersion: string;
  /** `vX.Y.Z`, the kubelet version the Node reports. */
  kubernetesVersion: string;
  /** Image Factory schematic ID, also written to the `extensions.talos.dev/schematic` annotation; '' for an image the factory did not build. */
  schematic: string;
  /** Loopback address (127.0.0.0/8) the Node reports as InternalIP. */
  internalIP: string;
  labels?: Record<string, string>;
}

export interface FleetNodeState extends FleetNodeSpec {
  /** Changes on every simulated boot, like /proc/sys/kernel/random/boot_id. */
  bootId: string;
  up: boolean;
  /** A restarted kubelet that has not reported Ready yet: the Node is up but Ready=False. */
  kubeletStarting?: boolean;
}

export interface BringUpOptions {
  talosVersion?: string;
  kubernetesVersion?: string;
  /** The booted image's schematic; null: an image the factory did not build (plain installer), so the annotation goes. Omitted: unchanged. */
  schematic?: string | null;
  /** Defaults to a fresh random boot ID. */
  bootId?: string;
}

/** Kubernetes component images a node's machine config names (`<repository>:<vX.Y.Z>`). */
export interface ComponentImages {
  kubelet?: string | undefined;
  apiServer?: string | undefined;
  controllerManager?: string | undefined;
  scheduler?: string | undefined;
  proxy?: string | undefined;
}

/** The static pods Talos runs on a control-plane node (mirror pod `kube-system/<component>-<node>`). */
export type StaticPodComponent = 'kube-apiserver' | 'kube-controller-manager' | 'kube-scheduler';

/** What a control-plane node's kubelet runs for one static pod. */
export interface StaticPodState {
  image: string;
  /** `talos.dev/config-version`: metadata.version of the component's COSI config resource (APIServerConfigs, ...). */
  configVersion: string;
  ready: boolean;
}

/** What the Talos simulator needs from the fleet to make a reboot visible in Kubernetes. */
export interface FleetControl {
  nodes(): readonly FleetNodeState[];
  /** Look a node up by name or by InternalIP. */
  node(nameOrIP: string): FleetNodeState | undefined;
  /** The node stops its heartbeat and reports Ready=Unknown, as a rebooting node does. */
  takeDown(name: string, reason?: string): Promise<void>;
  /** The node boots: new boot ID, versions as given, Ready again. */
  bringUp(name: string, opts?: BringUpOptions): Promise<FleetNodeState>;
  /**
   * A control-plane node's static pod as its kubelet runs it: a new image or config version
   * replaces the mirror pod (new UID); the same image and version only updates its readiness.
   */
  syncStaticPod(name: string, component: StaticPodComponent, pod: StaticPodState): Promise<void>;
  /**
   * The node's kubelet (re)started on `version`: the Node reports that kubeletVersion, Ready=False
   * while `ready` is false (the kubelet's first status posts), Ready=True once it is.
   */
  setKubelet(name: string, kubelet: { version: string; ready: boolean }): Promise<void>;
  /**
   * Talos re-rendered the bootstrap manifests from a control-plane config naming this kube-proxy
   * image: the `kube-system/kube-proxy` DaemonSet takes it (no-op when it has it already) and rolls
   * its pods node by node, each new pod Ready after `podReadyMs`. Resolves once the template is updated.
   */
  setKubeProxyImage(image: string, opts: { podReadyMs: number }): Promise<void>;
}
