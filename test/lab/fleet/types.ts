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
  /** Image Factory schematic ID, also written to the `extensions.talos.dev/schematic` annotation. */
  schematic: string;
  /** Loopback address (127.0.0.0/8) the Node reports as InternalIP. */
  internalIP: string;
  labels?: Record<string, string>;
}

export interface FleetNodeState extends FleetNodeSpec {
  /** Changes on every simulated boot, like /proc/sys/kernel/random/boot_id. */
  bootId: string;
  up: boolean;
}

export interface BringUpOptions {
  talosVersion?: string;
  kubernetesVersion?: string;
  schematic?: string;
  /** Defaults to a fresh random boot ID. */
  bootId?: string;
}

/** Kubernetes component images a node's machine config names (`<repository>:<vX.Y.Z>`). */
export interface ComponentImages {
  kubelet?: string | undefined;
  apiServer?: string | undefined;
  controllerManager?: string | undefined;
  scheduler?: string | undefined;
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
   * The node's machine config changed live (ApplyConfiguration): the kubelet restarts on the
   * version its image names and control-plane static pods are replaced, as Talos does.
   */
  applyComponents(name: string, images: ComponentImages): Promise<void>;
}
