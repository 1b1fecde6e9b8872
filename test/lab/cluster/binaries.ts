// Where the lab's Go-built binaries live (etcd, kube-apiserver, kube-controller-manager, kubectl), as
// test/lab/prepare.sh built them before the run.
import { builtPartSync } from '../built.js';

let cached: string | undefined;

/** The bin directory of test/lab/gobuild/build.sh; throws, saying what builds it, when the cache lacks a binary. */
export function labBinDir(): string {
  cached ??= builtPartSync('./gobuild/build.sh');
  return cached;
}
