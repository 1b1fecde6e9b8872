// The chaos campaign's fixed subset, part 1: the control plane and Talos failing under the rollout.
// Seeds chosen to cover the campaign's fault kinds and trigger moments on three-node fleets, each
// the quickest of the seeds drawing its faults (a run is a fresh lab: ≈ 15 s before the plan
// starts), so the nine seeds of the three files stay within the subset's time budget.
import { chaosSubset } from './support/chaos-subset.js';

chaosSubset('chaos: the fixed subset of seeds (control plane, Talos)', [
  // Halt/1: the old-partition boot fails its node and halts the plan; a kill and an apiserver restart
  // on the way. The regression case of the lab fleet's lost node writes (an apiserver restart while
  // the node rebooted left it down for good).
  { seed: 374, faults: ['controller-kill', 'apiserver-restart', 'old-partition'], maxNodes: 4 },
  // Two replicas: the leader SIGKILLed and etcd restarted at the first job phase changes.
  { seed: 853, faults: ['leader-kill', 'etcd-restart'], maxNodes: 3 },
  // A Kubernetes upgrade too: one of the Talos endpoints lost for good, then every endpoint down for a while.
  { seed: 503, faults: ['talos-down', 'talos-endpoint-lost'], maxNodes: 4 },
  // Three control-plane nodes at concurrency 2 (the etcd gate takes one at a time): a member lags far
  // behind the leader for 6 s early in the rollout and the controller is killed; the checker reads
  // the simulator's etcd record (quorum at every moment, no leader rebooted while leading).
  { seed: 388, faults: ['etcd-member-lag', 'controller-kill'], maxNodes: 5 },
]);
