// The chaos campaign's fixed subset, part 3: nodes that fail for good (a PDB that never allows
// eviction, a node that never comes back) and the clock jumping past a window, each with a
// control-plane or network fault on top, so the failure policy and the window are judged under
// chaos too, not only by the drain-fault and window e2e tests.
import { chaosSubset } from './support/chaos-subset.js';

chaosSubset('chaos: the fixed subset of seeds (failing nodes, clock)', [
  // Halt/2 over an extra group: one node's PDB never allows eviction; the controller SIGKILLed
  // early in the Talos calls.
  { seed: 619, faults: ['pdb-blocked', 'controller-kill'], maxNodes: 4 },
  // Pause/1: a node never comes back from its reboot and pauses the plan, under a 429/500 storm
  // on every other controller write.
  { seed: 621, faults: ['node-never-back', 'write-storm'], maxNodes: 4 },
  // The controller's clock jumps past the window's opening; the apiserver restarts during the
  // first Talos calls.
  { seed: 609, faults: ['clock-jump', 'apiserver-restart'], maxNodes: 4 },
  // Halt/1 with a Kubernetes target through Git: two failing nodes (PDB and never back) and the
  // leader killed on the way; the first failure halts the plan.
  { seed: 631, faults: ['pdb-blocked', 'node-never-back', 'leader-kill'], maxNodes: 4 },
  // Pause/2: the clock jump, Talos down for a while, and the apiserver connection cut at the
  // first job phase change.
  { seed: 627, faults: ['clock-jump', 'connection-cut', 'talos-down'], maxNodes: 4 },
]);
