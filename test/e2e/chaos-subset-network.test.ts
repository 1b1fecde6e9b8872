// The chaos campaign's fixed subset, part 2: Git and apiserver writes failing under the rollout, and a
// Kubernetes upgrade under a kill (see chaos-subset.test.ts for how the seeds were chosen). Seeds that left the subset
// to keep npm test within its budget, each still covered by the others' faults and triggers, replay
// with `npm run chaos`: 3930 (connection-cut inside a status write + write-storm: `--seed 3930
// --runs 1 --faults connection-cut,write-storm --max-nodes 3`) and 3297, the campaign's own draw on
// 10 nodes and the regression case of the lab kubelet that did not retry a pod's final delete
// (`--seed 3297 --runs 1 --faults controller-kill,leader-kill,apiserver-restart,etcd-restart,connection-cut,write-storm,talos-down,talos-endpoint-lost,git-down,force-push,pdb-blocked,node-never-back,old-partition,clock-jump --max-nodes 40`).
import { chaosSubset } from './support/chaos-subset.js';

chaosSubset('chaos: the fixed subset of seeds (network, Git)', [
  // The plans branch force-pushed early, the git server down late; Halt/2.
  { seed: 514, faults: ['git-down', 'force-push'], maxNodes: 4 },
  // With a Kubernetes target: etcd restarted at the first eviction, the controller killed during the Talos calls.
  { seed: 939, faults: ['controller-kill', 'etcd-restart'], maxNodes: 3 },
  // The controller killed inside a status write (the write lands, the writer is gone), a 429/500
  // storm on writes from the first Talos calls.
  { seed: 1274, faults: ['controller-kill', 'write-storm'], maxNodes: 3 },
]);
