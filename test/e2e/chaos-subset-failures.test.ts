// The chaos campaign's fixed subset, part 3: nodes that fail for good (a PDB that never allows
// eviction, a node that never comes back) and the clock jumping past a window, each with a
// control-plane or network fault on top, so the failure policy and the window are judged under
// chaos too, not only by the drain-fault and window e2e tests.
import { chaosSubset } from './support/chaos-subset.js';

// Earlier seeds of this file (609, 631; 518 and the etcd/leader 514 of the other files) pass too but
// took 35-92 s each; they replay with `npm run chaos -- --seed 631 --runs 1 --faults
// pdb-blocked,node-never-back,leader-kill --max-nodes 4`.
chaosSubset('chaos: the fixed subset of seeds (failing nodes, clock)', [
  // Pause/2: the clock jump, Talos down for a while, and the apiserver connection cut at the
  // first job phase change.
  { seed: 627, faults: ['clock-jump', 'connection-cut', 'talos-down'], maxNodes: 4 },
  // Halt/1: two failing nodes (PDB and never back) and the leader killed inside the first status
  // write; the first failure halts the plan.
  { seed: 2500, faults: ['pdb-blocked', 'node-never-back', 'leader-kill'], maxNodes: 3 },
  // The controller's clock jumps past the window's opening; the apiserver restarts at the first job phase.
  { seed: 1714, faults: ['clock-jump', 'apiserver-restart'], maxNodes: 3 },
]);
