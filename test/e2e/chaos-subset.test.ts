// The chaos campaign's fixed subset, part 1: the control plane and Talos failing under the rollout.
// Seeds chosen to cover several fault kinds at once on small fleets (≤ 4 nodes) so the subset stays
// within its time budget; every kind of the campaign but pdb-blocked, node-never-back and clock-jump
// (covered by the drain-fault and window e2e tests) is in one of the two files.
import { chaosSubset } from './support/chaos-subset.js';

chaosSubset('chaos: the fixed subset of seeds (control plane, Talos)', [
  // Halt/1: the old-partition boot fails its node and halts the plan; a kill and an apiserver restart
  // on the way. The regression case of the lab fleet's lost node writes (an apiserver restart while
  // the node rebooted left it down for good).
  { seed: 374, faults: ['controller-kill', 'apiserver-restart', 'old-partition'], maxNodes: 4 },
  // Two replicas: etcd restarted early, the leader SIGKILLed late in the rollout.
  { seed: 514, faults: ['leader-kill', 'etcd-restart'], maxNodes: 4 },
  // A Kubernetes upgrade too: one of the Talos endpoints lost for good, then every endpoint down for a while.
  { seed: 503, faults: ['talos-down', 'talos-endpoint-lost'], maxNodes: 4 },
]);
