// Helm 3 for the tests that need it: built from the Go module proxy into the lab cache by
// test/lab/gobuild/build-helm.sh on first use (a cold build prints its progress on stderr), then
// reused. Not part of `npm test`'s pretest nor of the demo: only the chart's tests pay for it.
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runToEnd as run, type ProcessRun } from './process.js';

const buildScript = fileURLToPath(new URL('./gobuild/build-helm.sh', import.meta.url));
let built: Promise<string> | undefined;

export type HelmRun = ProcessRun;

/** The path of the lab's helm binary, building it when the cache lacks it. */
export function helmBinary(): Promise<string> {
  built ??= run('bash', [buildScript], { stderr: 'inherit' }).then((r) => {
    const dir = r.stdout.trim().split('\n').at(-1);
    if (r.code !== 0 || !dir) throw new Error(`${buildScript} failed (exit ${String(r.code)})`);
    return join(dir, 'helm');
  });
  return built;
}

/**
 * A helm runner with its own HOME-like directories under `stateDir` (no user config, cache or
 * repositories leak in) and, when given, the lab cluster's kubeconfig. Never throws for a non-zero exit.
 */
export async function helmRunner(stateDir: string, kubeconfig?: string): Promise<(args: string[], input?: string, cwd?: string) => Promise<HelmRun>> {
  const helm = await helmBinary();
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: stateDir,
    HELM_CACHE_HOME: join(stateDir, 'cache'),
    HELM_CONFIG_HOME: join(stateDir, 'config'),
    HELM_DATA_HOME: join(stateDir, 'data'),
    ...(kubeconfig ? { KUBECONFIG: kubeconfig } : {}),
  };
  return (args, input, cwd) => run(helm, kubeconfig ? ['--kubeconfig', kubeconfig, ...args] : args, { env, ...(input !== undefined ? { input } : {}), ...(cwd ? { cwd } : {}) });
}
