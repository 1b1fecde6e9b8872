// The chaos campaign's fixed subset, part 2: the network and Git failing under the rollout (see
// chaos-subset.test.ts for how the seeds were chosen).
import { chaosSubset } from './support/chaos-subset.js';

chaosSubset('chaos: the fixed subset of seeds (network, Git)', [
  // The controller ↔ apiserver connection cut, then a 429/500 storm on writes; the plan from Git.
  { seed: 518, faults: ['connection-cut', 'write-storm'], maxNodes: 4 },
  // The plans branch force-pushed early, the git server down late; Halt/2.
  { seed: 514, faults: ['git-down', 'force-push'], maxNodes: 4 },
]);
