// A real Kubernetes control plane for tests and the demo: etcd, kube-apiserver and
// kube-controller-manager (disruption, garbage-collector, namespace and job controllers only) on free
// loopback ports, with certificates made fresh for each cluster.
import { writeFileSync } from 'node:fs';
import { setTimeout as delay } from 'node:timers/promises';
import { join } from 'node:path';
import { makeLabDir, spawnManaged, type ManagedProcess } from '../process.js';
import { freePort } from '../net.js';
import { createCA, createKeyPair, issueCert } from '../pki.js';
import { labBinDir } from './binaries.js';
import { httpGet, kubeconfigYaml } from './http.js';
import { waitFor } from '../wait.js';
import { waitForDisruptionController } from './readiness.js';

export interface LabCluster {
  kubeconfigPath: string;
  /** Directory of the lab's etcd, kube-apiserver, kube-controller-manager and kubectl. */
  binDir: string;
  /** A real kubectl of the cluster's version. */
  kubectl: string;
  /** `https://127.0.0.1:PORT` */
  server: string;
  /** PEM of the cluster CA, client certificate and key of a system:masters user. */
  caPem: string;
  /** Run directory: certificates, logs, etcd data. Removed by stop(). */
  dir: string;
  /**
   * Kills one component (SIGKILL: a crash, as a node losing power does to it) and starts it again
   * with the same flags, ports and data; resolves once it is ready again. `downMs` holds it down
   * that long first (a restart that takes a while).
   */
  restart(component: RestartableComponent, opts?: { downMs?: number }): Promise<void>;
  stop(): Promise<void>;
}

type RestartableComponent = 'etcd' | 'kube-apiserver';

export interface StartClusterOptions {
  /** Milliseconds to wait for each component to become ready. */
  readyTimeoutMs?: number;
  /** Print component start-up times to stderr. */
  verbose?: boolean;
}

// job-controller: hook Jobs run to Complete/Failed as in a real cluster (the fleet binds and runs their pods).
const CONTROLLERS = ['disruption-controller', 'garbage-collector-controller', 'namespace-controller', 'job-controller'];

/**
 * Starts the cluster; a port picked free can be taken by another process before etcd or the
 * apiserver binds it (several labs on one machine), so a start that fails that way is retried.
 */
export async function startCluster(opts: StartClusterOptions = {}): Promise<LabCluster> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startClusterOnce(opts);
    } catch (err) {
      if (attempt >= 3 || !/address already in use/.test(String((err as Error).message))) throw err;
      if (opts.verbose)
        process.stderr.write(`[lab] a port was taken before it was bound; starting again (attempt ${attempt + 1})\n`);
    }
  }
}

async function startClusterOnce(opts: StartClusterOptions): Promise<LabCluster> {
  const timeoutMs = opts.readyTimeoutMs ?? 60_000;
  const binDir = labBinDir();
  const lab = makeLabDir('kangal-lab-cluster');
  const dir = lab.path;
  const processes: ManagedProcess[] = [];
  /** How to start each restartable component again: the same command, flags and readiness URL. */
  const recipes = new Map<
    RestartableComponent,
    { command: string; args: string[]; logPath: string; readyUrl: string; caPem: string | undefined }
  >();
  const started = Date.now();
  const progress = (what: string): void => {
    if (opts.verbose) process.stderr.write(`[lab] ${what} (+${Date.now() - started} ms)\n`);
  };
  const stop = async (): Promise<void> => {
    for (const p of processes.reverse()) await p.stop();
    lab.remove();
  };
  try {
    const pki = join(dir, 'pki');
    const ca = createCA(pki, 'ca', { commonName: 'kangal-lab-cluster-ca' });
    const serving = issueCert(pki, 'apiserver', ca, {
      commonName: 'kube-apiserver',
      usage: 'server',
      subjectAltNames: ['IP:127.0.0.1', 'DNS:localhost'],
    });
    const admin = issueCert(pki, 'admin', ca, {
      commonName: 'lab-admin',
      organizations: ['system:masters'],
      usage: 'client',
    });
    const sa = createKeyPair(pki, 'sa');
    const [etcdPort, etcdPeerPort, apiPort] = [await freePort(), await freePort(), await freePort()];
    const server = `https://127.0.0.1:${apiPort}`;

    const etcdArgs = [
      '--data-dir',
      join(dir, 'etcd'),
      '--name',
      'lab',
      '--listen-client-urls',
      `http://127.0.0.1:${etcdPort}`,
      '--advertise-client-urls',
      `http://127.0.0.1:${etcdPort}`,
      '--listen-peer-urls',
      `http://127.0.0.1:${etcdPeerPort}`,
      '--initial-advertise-peer-urls',
      `http://127.0.0.1:${etcdPeerPort}`,
      '--initial-cluster',
      `lab=http://127.0.0.1:${etcdPeerPort}`,
      '--unsafe-no-fsync=true',
      '--log-level',
      'warn',
    ];
    recipes.set('etcd', {
      command: join(binDir, 'etcd'),
      args: etcdArgs,
      logPath: join(dir, 'etcd.log'),
      readyUrl: `http://127.0.0.1:${etcdPort}/health`,
      caPem: undefined,
    });
    const etcd = spawnManaged('etcd', join(binDir, 'etcd'), etcdArgs, { logPath: join(dir, 'etcd.log') });
    processes.push(etcd);
    await waitReady(etcd, `http://127.0.0.1:${etcdPort}/health`, undefined, timeoutMs);
    progress('etcd ready');

    const apiserverArgs = [
      `--etcd-servers=http://127.0.0.1:${etcdPort}`,
      '--bind-address=127.0.0.1',
      `--secure-port=${apiPort}`,
      `--tls-cert-file=${serving.certPath}`,
      `--tls-private-key-file=${serving.keyPath}`,
      `--client-ca-file=${ca.certPath}`,
      '--authorization-mode=RBAC',
      `--service-account-issuer=${server}`,
      `--service-account-key-file=${sa.publicPath}`,
      `--service-account-signing-key-file=${sa.privatePath}`,
      '--service-cluster-ip-range=10.0.0.0/24',
      '--allow-privileged=true',
      '--disable-admission-plugins=ServiceAccount',
      // Less background work on a 2-core machine; nothing here relies on API priority and fairness.
      '--enable-priority-and-fairness=false',
      '--endpoint-reconciler-type=none',
      `--cert-dir=${join(dir, 'apiserver-certs')}`,
      '--v=1',
    ];
    recipes.set('kube-apiserver', {
      command: join(binDir, 'kube-apiserver'),
      args: apiserverArgs,
      logPath: join(dir, 'kube-apiserver.log'),
      readyUrl: `${server}/readyz`,
      caPem: ca.cert,
    });
    const apiserver = spawnManaged('kube-apiserver', join(binDir, 'kube-apiserver'), apiserverArgs, {
      logPath: join(dir, 'kube-apiserver.log'),
    });
    processes.push(apiserver);
    await waitReady(apiserver, `${server}/readyz`, ca.cert, timeoutMs);
    progress('kube-apiserver ready');

    const kubeconfigPath = join(dir, 'admin.kubeconfig');
    writeFileSync(kubeconfigPath, kubeconfigYaml(server, ca.cert, admin), { mode: 0o600 });

    const kcm = spawnManaged(
      'kube-controller-manager',
      join(binDir, 'kube-controller-manager'),
      [
        `--kubeconfig=${kubeconfigPath}`,
        '--leader-elect=false',
        '--secure-port=0',
        '--use-service-account-credentials=false',
        `--controllers=${CONTROLLERS.join(',')}`,
        `--service-account-private-key-file=${sa.privatePath}`,
        `--root-ca-file=${ca.certPath}`,
        '--kube-api-qps=100',
        '--kube-api-burst=200',
        '--v=1',
      ],
      { logPath: join(dir, 'kube-controller-manager.log') },
    );
    processes.push(kcm);
    await waitForDisruptionController(kubeconfigPath, kcm, timeoutMs);
    progress('kube-controller-manager ready');

    const restart = async (component: RestartableComponent, o: { downMs?: number } = {}): Promise<void> => {
      const recipe = recipes.get(component);
      const index = processes.findIndex((p) => p.name === component);
      const old = processes[index];
      if (!recipe || !old) throw new Error(`${component} is not running in this lab cluster`);
      process.kill(old.pid, 'SIGKILL');
      await old.exited;
      if (o.downMs) await delay(o.downMs);
      const again = spawnManaged(component, recipe.command, recipe.args, { logPath: recipe.logPath });
      processes[index] = again;
      await waitReady(again, recipe.readyUrl, recipe.caPem, timeoutMs);
    };
    return { kubeconfigPath, binDir, kubectl: join(binDir, 'kubectl'), server, caPem: ca.cert, dir, restart, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

async function waitReady(
  proc: ManagedProcess,
  url: string,
  caPem: string | undefined,
  timeoutMs: number,
): Promise<void> {
  let exitCode: number | null | undefined;
  void proc.exited.then((code) => (exitCode = code));
  // A process that exited is not going to become ready: the wait ends at once, with its log.
  const outcome = await waitFor(
    async () => {
      if (exitCode !== undefined) return { exited: exitCode };
      const res = await httpGet(url, caPem).catch(() => undefined);
      return res?.status === 200 ? { ready: true } : undefined;
    },
    { timeoutMs, intervalMs: 100, description: `${proc.name} at ${url}` },
  ).catch((err: unknown) => ({ error: err as Error }));
  if ('ready' in outcome) return;
  const why = 'exited' in outcome ? `${proc.name} exited with code ${String(outcome.exited)}` : outcome.error.message;
  throw new Error(`${why}\n--- ${proc.logPath} (last lines) ---\n${proc.tail()}`);
}
