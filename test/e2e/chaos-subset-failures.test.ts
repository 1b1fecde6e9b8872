// The chaos campaign's fixed subset, part 3: nodes that fail for good (a PDB that never allows
// eviction, a node that never comes back) and the clock jumping past a window, each with a
// control-plane or network fault on top, so the failure policy and the window are judged under
// chaos too, not only by the drain-fault and window e2e tests.
import { chaosSubset } from './support/chaos-subset.js';

// Seeds 619 (pdb-blocked + controller-kill, Halt/2; 98 s) and 621 (node-never-back + write-storm,
// Pause/1; 53 s) were here too: both pass, but the suite is held under its time budget with the
// three below (`npm run chaos -- --seed 619 --runs 1 --faults pdb-blocked,controller-kill --max-nodes 4`).
chaosSubset('chaos: the fixed subset of seeds (failing nodes, clock)', [
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
