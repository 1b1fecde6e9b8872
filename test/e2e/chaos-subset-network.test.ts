// The chaos campaign's fixed subset, part 2: the network and Git failing under the rollout, and a
// Kubernetes upgrade under a kill (see chaos-subset.test.ts for how the seeds were chosen).
import { FAULT_KINDS } from '../chaos/scenario.js';
import { chaosSubset } from './support/chaos-subset.js';

chaosSubset('chaos: the fixed subset of seeds (network, Git)', [
  // The controller ↔ apiserver connection cut inside a status write, then a 429/500 storm on writes.
  { seed: 3930, faults: ['connection-cut', 'write-storm'], maxNodes: 3 },
  // The plans branch force-pushed early, the git server down late; Halt/2.
  { seed: 514, faults: ['git-down', 'force-push'], maxNodes: 4 },
  // With a Kubernetes target: etcd restarted at the first eviction, the controller killed during the Talos calls.
  { seed: 939, faults: ['controller-kill', 'etcd-restart'], maxNodes: 3 },
  // The campaign's own draw (all faults, up to 40 nodes), 10 nodes: etcd restarted right after a
  // pod's graceful deletion began, so the lab kubelet's final delete failed. Regression case of the
  // kubelet that did not try again: the pod stayed Terminating past drainTimeout and two nodes failed.
  // Its draw is from the kinds the campaign had then (the etcd member fault came later and would draw another run).
  { seed: 3297, faults: FAULT_KINDS.filter((k) => k !== 'etcd-member-lag'), maxNodes: 40 },
]);
