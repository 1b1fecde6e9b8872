// The chaos campaign's fixed subset, part 3: nodes that fail for good (a PDB that never allows
// eviction, a node that never comes back) and the clock jumping past a window, each with a
// control-plane or network fault on top, so the failure policy and the window are judged under
// chaos too, not only by the drain-fault and window e2e tests.
import { chaosSubset } from './support/chaos-subset.js';

// Earlier seeds of this file (609, 631; 518 and the etcd/leader 514 of the other files) pass too but
// took 35-92 s each; they replay with `npm run chaos -- --seed 631 --runs 1 --faults
// pdb-blocked,node-never-back,leader-kill --max-nodes 4`; so does 1714 (the clock past the window's
// opening, the apiserver restarted at the first job phase: `--faults clock-jump,apiserver-restart
// --max-nodes 3`), whose faults and trigger 627 and 374 cover.
chaosSubset('chaos: the fixed subset of seeds (failing nodes, clock)', [
  // Pause/2: the clock jump, Talos down for a while, and the apiserver connection cut at the
  // first job phase change.
  { seed: 627, faults: ['clock-jump', 'connection-cut', 'talos-down'], maxNodes: 4 },
  // Halt/1: two failing nodes (PDB and never back) and the leader killed inside the first status
  // write; the first failure halts the plan.
  { seed: 2500, faults: ['pdb-blocked', 'node-never-back', 'leader-kill'], maxNodes: 3 },
]);
