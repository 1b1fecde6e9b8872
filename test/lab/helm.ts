// Helm 3 for the tests that need it: built from the Go module proxy into the lab cache by
// test/lab/gobuild/build-helm.sh, which `npm test`'s set-up (test/lab/prepare.sh) runs before the
// first test; found here, never built.
import { join } from 'node:path';
import { builtPart } from './built.js';
import { runToEnd as run, type ProcessRun } from './process.js';

let built: Promise<string> | undefined;

export type HelmRun = ProcessRun;

/** The path of the lab's helm binary; rejects, saying what builds it, when the cache lacks it. */
export function helmBinary(): Promise<string> {
  built ??= builtPart('./gobuild/build-helm.sh').then((dir) => join(dir, 'helm'));
  return built;
}

/**
 * A helm runner with its own HOME-like directories under `stateDir` (no user config, cache or
 * repositories leak in) and, when given, the lab cluster's kubeconfig. Never throws for a non-zero exit.
 */
export async function helmRunner(
  stateDir: string,
  kubeconfig?: string,
): Promise<(args: string[], input?: string, cwd?: string) => Promise<HelmRun>> {
  const helm = await helmBinary();
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: stateDir,
    HELM_CACHE_HOME: join(stateDir, 'cache'),
    HELM_CONFIG_HOME: join(stateDir, 'config'),
    HELM_DATA_HOME: join(stateDir, 'data'),
    ...(kubeconfig ? { KUBECONFIG: kubeconfig } : {}),
  };
  return (args, input, cwd) =>
    run(helm, kubeconfig ? ['--kubeconfig', kubeconfig, ...args] : args, {
      env,
      ...(input !== undefined ? { input } : {}),
      ...(cwd ? { cwd } : {}),
    });
}
