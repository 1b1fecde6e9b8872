// One fixture for the PatchJob end-to-end tests: a real control plane with the CRDs, a simulated
// fleet with its Talos API simulator, the Talos Secret in the operator namespace, an independent
// observer, and `kangal-patch run` as child processes. Jobs (and their slot Leases) are created
// directly, as the plan reconciler will.
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  PatchStrategy,
  PolicyV1Api,
  V1MicroTime,
  setHeaderOptions,
  type KubeConfig,
} from '@kubernetes/client-node';
import { startCluster, type LabCluster } from '../../lab/cluster/index.js';
import { startApiInterposer, type ApiInterposer } from '../../lab/cluster/interposer.js';
import {
  describeFleet,
  startFleet,
  type Fleet,
  type FleetDescription,
  type WorkloadSpec,
} from '../../lab/fleet/index.js';
import { loadKubeConfig } from '../../lab/kube.js';
import { startObserver, type Observer } from '../../lab/observer.js';
import { startForge, type Forge } from '../../lab/forge/index.js';
import { cloneWorkingCopy, type WorkingCopy } from '../../lab/forge/working-copy.js';
import { startRegistry, type Registry } from '../../lab/registry/index.js';
import { makeLabDir, spawnManaged, type LabDir, type ManagedProcess } from '../../lab/process.js';
import {
  startTalosSimulator,
  TEST_TIMINGS,
  type TalosSimTimings,
  type TalosSimulator,
  type TalosSimulatorOptions,
} from '../../lab/talos/index.js';
import { waitFor } from '../../lab/wait.js';
import { productEntry } from '../../support/product.js';
import { controllerLogs, controllerOutputs, labSecrets, secretLeaks } from './secrets-scan.js';

export const OPERATOR_NAMESPACE = 'kangal-patch';
/** Where hook Jobs run (the controller's default --hooks-namespace), labelled as kustomize/manager/hooks-namespace.yaml labels it. */
export const HOOKS_NAMESPACE = 'kangal-patch-hooks';
export const TALOS_SECRET = 'talos-credentials';
const GROUP = 'kangalpatch.ozalp.dk';
const VERSION = 'v1alpha1';
const PLAN_LABEL = `${GROUP}/patchplan`;
const root = fileURLToPath(new URL('../../..', import.meta.url));

export interface JobLabOptions {
  fleet: FleetDescription;
  /** Talos version per node name, where it differs from the fleet's. */
  talosVersions?: Record<string, string>;
  rescheduleDelayMs?: number;
  /** Image Factory schematic per node name, where it differs from the fleet's (vanilla). */
  schematics?: Record<string, string>;
  /** Extra labels per node name. */
  labels?: Record<string, Record<string, string>>;
  /** Start the lab registry with these `repository:tag` images; controllers check ghcr.io and factory.talos.dev images there. */
  images?: string[];
  workloads?: WorkloadSpec[];
  timings?: Partial<TalosSimTimings>;
  /** Run the kube-system/kube-proxy DaemonSet, rendered from the control-plane config as Talos does. */
  kubeProxy?: boolean;
  /** Talos 1.14 component documents in the nodes' machine configs (all nodes or per node name; nodes on v1.14+): TalosSimulatorOptions.multiDocs. */
  multiDocs?: TalosSimulatorOptions['multiDocs'];
  /** Put the API interposer between controllers and the apiserver (lab.interposer): tests see and time their requests. */
  interposer?: boolean;
  /** FleetOptions.statusPostMs: every up node posts its Node status this often. */
  statusPostMs?: number;
  /** FleetOptions.leaseRenewMs (0: node Leases written at registration and boot only) and registerConcurrency, for big fleets. */
  leaseRenewMs?: number;
  registerConcurrency?: number;
  /** Start the lab forge with a plans repository (`acme/plans`, branch main, a plans/ folder kept by .gitkeep) cloned for pushes. */
  plansRepo?: boolean;
  /**
   * stop() first runs the secrets scan (support/secrets-scan.ts) over what the controllers produced
   * and fails when a credential shows up (default true). The chaos runner checks it itself.
   */
  secretsScan?: boolean;
  /** Called as the start passes its steps, with the cluster's run directory (where its processes are found): lets a bench time them. */
  progress?: (step: string, clusterDir: string) => void;
}

export interface Controller {
  readonly process: ManagedProcess;
  /** Parsed JSON log lines so far. */
  logs(): Record<string, unknown>[];
  /** SIGKILL: a crash, nothing cleaned up. */
  kill(): Promise<void>;
  /** SIGTERM and wait for the exit code. */
  stop(): Promise<number | null>;
  /** GET /metrics (Prometheus text); only for a controller started with `metrics: true`. */
  scrape(): Promise<string>;
}

interface JobInput {
  node: string;
  plan?: string;
  group?: string;
  slot?: number;
  target: Record<string, unknown>;
  spec?: Record<string, unknown>;
}

export interface JobLab {
  cluster: LabCluster;
  fleet: Fleet;
  talos: TalosSimulator;
  /** With `interposer`: what controllers talk to by default. */
  interposer: ApiInterposer | undefined;
  kc: KubeConfig;
  observer: Observer;
  /** The lab registry, when `images` was given. */
  registry: Registry | undefined;
  /** `--registry-mirror` flags sending ghcr.io and factory.talos.dev image checks to the lab registry (empty without `images`). */
  mirrorArgs: string[];
  /** The lab forge and a git-CLI clone of the plans repository, with `plansRepo`. */
  forge: Forge | undefined;
  plans: WorkingCopy | undefined;
  /** `kangal-patch run` flags pointing at the plans repository (token in a file), with `plansRepo`. */
  gitArgs(opts?: { pollInterval?: string; extra?: string[] }): string[];
  /**
   * `kubeconfig`: the controller's credentials (default: the lab admin's, through the interposer when there is one), e.g. a ServiceAccount token's.
   * `metrics`: serve /metrics on a free loopback port (default: disabled), read with `scrape()`.
   * `entry`: the `kangal-patch` script to run (default: the compiled product; `bin/kangal-patch.js` of the checkout runs the sources through tsx).
   */
  startController(opts?: {
    args?: string[];
    env?: Record<string, string>;
    name?: string;
    kubeconfig?: string;
    metrics?: boolean;
    entry?: string;
  }): Controller;
  /** Creates the slot Lease, then the PatchJob; returns the job name. */
  createJob(job: JobInput): Promise<string>;
  job(name: string): Promise<{ spec: Record<string, unknown>; status: Record<string, unknown> } | undefined>;
  /** Waits until the job's phase is one of `phases`; returns its status. */
  waitForPhase(name: string, phases: string[], timeoutMs: number): Promise<Record<string, unknown>>;
  deleteJob(name: string): Promise<void>;
  /** Creates a PatchPlan from a document (as kubectl apply would, before the GitOps loop exists). */
  applyPlan(doc: Record<string, unknown>): Promise<void>;
  /** Merge-patches a plan's spec (a human editing it). */
  patchPlanSpec(name: string, spec: Record<string, unknown>): Promise<void>;
  plan(
    name: string,
  ): Promise<
    { metadata: Record<string, unknown>; spec: Record<string, unknown>; status: Record<string, unknown> } | undefined
  >;
  /** Waits until `check(status)` holds for the plan; returns its status. */
  waitForPlan(
    name: string,
    description: string,
    check: (status: Record<string, unknown>) => boolean,
    timeoutMs: number,
  ): Promise<Record<string, unknown>>;
  stop(): Promise<void>;
}

export async function startJobLab(opts: JobLabOptions): Promise<JobLab> {
  const dir: LabDir = makeLabDir('kangal-e2e');
  const stops: (() => Promise<void> | void)[] = [() => dir.remove()];
  const controllers: Controller[] = [];
  let lab: JobLab | undefined;
  const stop = async (): Promise<void> => {
    // Before anything stops: the apiserver and the forge still answer for the scan.
    const leaks =
      lab !== undefined && opts.secretsScan !== false && controllers.length > 0 ? await leaksOf(lab, controllers) : [];
    lab = undefined;
    for (const s of stops.splice(0).reverse()) await s();
    if (leaks.length > 0)
      throw new Error(`secrets scan: a credential (git token or Talos key) appeared in ${leaks.join(', ')}`);
  };
  try {
    // The compiled product, as the image runs it (built once per run, cached across runs).
    const entry = await productEntry();
    const cluster = await startCluster();
    stops.push(() => cluster.stop());
    const progress = (step: string): void => opts.progress?.(step, cluster.dir);
    progress('control plane ready');
    let interposer: ApiInterposer | undefined;
    if (opts.interposer) {
      const i = await startApiInterposer(cluster);
      interposer = i;
      stops.push(() => i.close());
    }
    execFileSync(
      cluster.kubectl,
      ['--kubeconfig', cluster.kubeconfigPath, 'apply', '-k', join(root, 'kustomize/crd')],
      { stdio: 'pipe' },
    );
    execFileSync(
      cluster.kubectl,
      [
        '--kubeconfig',
        cluster.kubeconfigPath,
        'wait',
        '--for=condition=Established',
        'crd/patchjobs.kangalpatch.ozalp.dk',
        'crd/patchplans.kangalpatch.ozalp.dk',
      ],
      { stdio: 'pipe' },
    );
    const kc = loadKubeConfig(cluster.kubeconfigPath);
    const core = kc.makeApiClient(CoreV1Api);
    const leases = kc.makeApiClient(CoordinationV1Api);
    const custom = kc.makeApiClient(CustomObjectsApi);
    await core.createNamespace({ body: { metadata: { name: OPERATOR_NAMESPACE } } });
    // Pod Security `restricted` enforced, as the kustomize install and the chart create it: a hook pod the apiserver refuses never runs.
    await core.createNamespace({
      body: {
        metadata: {
          name: HOOKS_NAMESPACE,
          labels: {
            'pod-security.kubernetes.io/enforce': 'restricted',
            'pod-security.kubernetes.io/enforce-version': 'latest',
          },
        },
      },
    });

    const nodes = describeFleet(opts.fleet).map((n) => ({
      ...n,
      talosVersion: opts.talosVersions?.[n.name] ?? n.talosVersion,
      schematic: opts.schematics?.[n.name] ?? n.schematic,
      labels: { ...n.labels, ...opts.labels?.[n.name] },
    }));
    const fleet = await startFleet({
      kubeconfigPath: cluster.kubeconfigPath,
      nodes,
      workloads: opts.workloads ?? [],
      rescheduleDelayMs: opts.rescheduleDelayMs,
      kubeProxy: opts.kubeProxy,
      statusPostMs: opts.statusPostMs,
      leaseRenewMs: opts.leaseRenewMs,
      registerConcurrency: opts.registerConcurrency,
      progress,
    });
    stops.push(() => fleet.stop());
    const talos = await startTalosSimulator({
      fleet,
      dir: dir.path,
      timings: { ...TEST_TIMINGS, ...opts.timings },
      nodeListeners: false,
      multiDocs: opts.multiDocs,
    });
    stops.push(() => talos.stop());
    progress('Talos simulator listening');
    await core.createNamespacedSecret({
      namespace: OPERATOR_NAMESPACE,
      body: { metadata: { name: TALOS_SECRET }, stringData: talos.secretData },
    });
    let mirrors: string[] = [];
    let registry: Registry | undefined;
    if (opts.images) {
      registry = await startRegistry();
      const r = registry;
      stops.push(() => r.stop());
      for (const image of opts.images) {
        const at = image.lastIndexOf(':');
        await registry.publish(image.slice(0, at), image.slice(at + 1));
      }
      mirrors = [
        '--registry-mirror',
        `ghcr.io=http://${registry.host}`,
        '--registry-mirror',
        `factory.talos.dev=http://${registry.host}`,
      ];
      talos.useRegistry({ url: registry.url }); // the nodes pull from the same registry the controllers check
    }
    let forge: Forge | undefined;
    let plans: WorkingCopy | undefined;
    let gitArgs: JobLab['gitArgs'] = () => {
      throw new Error('startJobLab({ plansRepo: true }) starts the forge');
    };
    if (opts.plansRepo) {
      const f = await startForge();
      forge = f;
      stops.push(() => f.stop());
      const { cloneUrl } = await f.createRepo('acme', 'plans', { files: { 'plans/.gitkeep': '' } });
      plans = await cloneWorkingCopy({ cloneUrl, token: f.token, dir: join(dir.path, 'plans-clone') });
      const tokenFile = join(dir.path, 'git-token');
      writeFileSync(tokenFile, `${f.token}\n`, { mode: 0o600 });
      gitArgs = (g = {}) => [
        '--git-url',
        cloneUrl,
        '--git-token-file',
        tokenFile,
        '--cluster-name',
        'lab',
        '--forge',
        'none',
        '--git-cache-dir',
        join(dir.path, `git-cache-${Math.random().toString(36).slice(2)}`),
        '--poll-interval',
        g.pollInterval ?? '2s',
        ...(g.extra ?? []),
      ];
    }
    const observer = await startObserver(kc, {
      leaseNamespace: OPERATOR_NAMESPACE,
      leaseLabel: PLAN_LABEL,
      groupLabel: `${GROUP}/group`,
      patchJobs: true,
    });
    stops.push(() => observer.stop());
    progress('observer synced');

    stops.push(async () => {
      for (const c of controllers) await c.process.stop(3000);
    });
    let count = 0;
    const startController: JobLab['startController'] = (o = {}) => {
      const name = o.name ?? `controller-${++count}`;
      const logPath = join(dir.path, `${name}.log`);
      const args = [
        o.entry ?? entry,
        'run',
        '--kubeconfig',
        o.kubeconfig ?? interposer?.kubeconfigPath ?? cluster.kubeconfigPath,
        '--namespace',
        OPERATOR_NAMESPACE,
        '--health-probe-bind-address',
        '127.0.0.1:0',
        '--metrics-bind-address',
        o.metrics ? '127.0.0.1:0' : '0',
        '--log-level',
        'debug',
        ...mirrors,
        ...(o.args ?? []),
      ];
      const process_ = spawnManaged(name, process.execPath, args, {
        logPath,
        cwd: root,
        env: { ...process.env, POD_NAME: name, ...o.env },
      });
      const c: Controller = {
        process: process_,
        logs: () => parseLog(logPath),
        kill: async () => {
          process.kill(process_.pid, 'SIGKILL');
          await process_.exited;
        },
        stop: async () => {
          // The grace the chart gives the pod (terminationGracePeriodSeconds: 30) before its SIGKILL.
          await process_.stop(30_000);
          return process_.exited;
        },
        scrape: async () => {
          if (!o.metrics) throw new Error(`controller ${name} was started without metrics: true`);
          // The port the OS chose, from the controller's own log line.
          const port = await waitFor(
            () => c.logs().find((l) => l['msg'] === 'metrics listening')?.['port'] as number | undefined,
            { timeoutMs: 60_000, description: `${name}: metrics listening` },
          );
          const res = await fetch(`http://127.0.0.1:${port}/metrics`);
          if (!res.ok) throw new Error(`${name} /metrics: HTTP ${res.status}`);
          return res.text();
        },
      };
      controllers.push(c);
      return c;
    };

    const createJob: JobLab['createJob'] = async (j) => {
      const plan = j.plan ?? 'e2e';
      const group = j.group ?? 'workers';
      const name = `${plan}-${j.node}`;
      await leases.createNamespacedLease({
        namespace: OPERATOR_NAMESPACE,
        body: {
          metadata: {
            name: `${plan}-${group}-${j.slot ?? 0}`,
            labels: { [PLAN_LABEL]: plan, [`${GROUP}/group`]: group },
          },
          spec: { holderIdentity: name, acquireTime: new V1MicroTime(), renewTime: new V1MicroTime() },
        },
      });
      await custom
        .createClusterCustomObject({
          group: GROUP,
          version: VERSION,
          plural: 'patchjobs',
          body: {
            apiVersion: `${GROUP}/${VERSION}`,
            kind: 'PatchJob',
            metadata: { name, labels: { [PLAN_LABEL]: plan, [`${GROUP}/group`]: group, [`${GROUP}/node`]: j.node } },
            spec: {
              nodeName: j.node,
              patchPlanRef: plan,
              group,
              target: j.target,
              talosConfig: { endpoints: [talos.endpoint], secretRef: { name: TALOS_SECRET } },
              ...j.spec,
            },
          },
        })
        .catch((err: unknown) => {
          throw new Error(`creating PatchJob ${name}: ${String((err as { body?: unknown }).body ?? err)}`);
        });
      return name;
    };
    const job: JobLab['job'] = async (name) => {
      try {
        return (await custom.getClusterCustomObject({ group: GROUP, version: VERSION, plural: 'patchjobs', name })) as {
          spec: Record<string, unknown>;
          status: Record<string, unknown>;
        };
      } catch {
        return undefined;
      }
    };
    const waitForPhase: JobLab['waitForPhase'] = async (name, phases, timeoutMs) => {
      let last: unknown;
      try {
        return await waitFor(
          async () => {
            const j = await job(name);
            last = j?.status;
            return j && phases.includes(String(j.status?.phase)) ? j.status : undefined;
          },
          { timeoutMs, description: `PatchJob ${name} in phase ${phases.join(' or ')}` },
        );
      } catch (err) {
        const lab = await labStateFor((last as { blockingPDB?: unknown } | undefined)?.blockingPDB);
        throw new Error(
          `${(err as Error).message}; last status: ${JSON.stringify(last)}\n${lab}controller logs:\n${controllers.map((c) => c.process.tail(15)).join('\n---\n')}`,
          { cause: err },
        );
      }
    };
    /** What the lab did, for a wait that timed out: its background errors, and the pods of a PDB that blocked a drain. */
    const labStateFor = async (blockingPDB: unknown): Promise<string> => {
      const lines = [`lab background errors: ${JSON.stringify(fleet.workloads.errors.slice(-10))}`];
      const [namespace, name] = typeof blockingPDB === 'string' ? blockingPDB.split('/') : [];
      if (namespace !== undefined && name !== undefined) {
        const pdb = await kc
          .makeApiClient(PolicyV1Api)
          .readNamespacedPodDisruptionBudget({ namespace, name })
          .catch((e: unknown) => String(e));
        const pods = await core.listNamespacedPod({ namespace }).catch(() => ({ items: [] }));
        lines.push(`PDB ${namespace}/${name} status: ${JSON.stringify(typeof pdb === 'string' ? pdb : pdb.status)}`);
        lines.push(
          `pods in ${namespace}: ${JSON.stringify(pods.items.map((p) => [p.metadata?.name, p.spec?.nodeName, p.status?.conditions?.find((c) => c.type === 'Ready')?.status, p.metadata?.deletionTimestamp ?? null]))}`,
        );
      }
      return `${lines.join('\n')}\n`;
    };
    const deleteJob: JobLab['deleteJob'] = async (name) => {
      await custom.deleteClusterCustomObject({ group: GROUP, version: VERSION, plural: 'patchjobs', name });
    };
    const plansApi = { group: GROUP, version: VERSION, plural: 'patchplans' };
    const applyPlan: JobLab['applyPlan'] = async (doc) => {
      await custom.createClusterCustomObject({ ...plansApi, body: doc }).catch((err: unknown) => {
        throw new Error(`creating PatchPlan: ${String((err as { body?: unknown }).body ?? err)}`, { cause: err });
      });
    };
    const patchPlanSpec: JobLab['patchPlanSpec'] = async (name, spec) => {
      await custom.patchClusterCustomObject(
        { ...plansApi, name, body: { spec } },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      );
    };
    const plan: JobLab['plan'] = async (name) => {
      try {
        return (await custom.getClusterCustomObject({ ...plansApi, name })) as {
          metadata: Record<string, unknown>;
          spec: Record<string, unknown>;
          status: Record<string, unknown>;
        };
      } catch {
        return undefined;
      }
    };
    const waitForPlan: JobLab['waitForPlan'] = async (name, description, check, timeoutMs) => {
      let last: unknown;
      try {
        return await waitFor(
          async () => {
            const p = await plan(name);
            last = p?.status;
            return p && check(p.status ?? {}) ? p.status : undefined;
          },
          { timeoutMs, description: `PatchPlan ${name}: ${description}` },
        );
      } catch (err) {
        const lab = await labStateFor(undefined);
        throw new Error(
          `${(err as Error).message}; last status: ${JSON.stringify(last)}\n${lab}controller logs:\n${controllers.map((c) => c.process.tail(15)).join('\n---\n')}`,
          { cause: err },
        );
      }
    };
    lab = {
      cluster,
      fleet,
      talos,
      interposer,
      kc,
      observer,
      registry,
      mirrorArgs: mirrors,
      forge,
      plans,
      gitArgs,
      startController,
      createJob,
      job,
      waitForPhase,
      deleteJob,
      applyPlan,
      patchPlanSpec,
      plan,
      waitForPlan,
      stop,
    };
    return lab;
  } catch (err) {
    await stop();
    throw err;
  }
}

/**
 * Where a lab credential shows up in what the controllers produced. A test may have stopped the
 * apiserver or the forge: then the logs are scanned alone (what could not be read is no leak found).
 */
async function leaksOf(lab: JobLab, controllers: readonly Controller[]): Promise<string[]> {
  const secrets = labSecrets(lab);
  try {
    return secretLeaks(await controllerOutputs(lab, controllers), secrets);
  } catch {
    return secretLeaks(controllerLogs(controllers), secrets);
  }
}

function parseLog(path: string): Record<string, unknown>[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return [];
  }
  return text.split('\n').flatMap((line) => {
    if (!line.startsWith('{')) return [];
    try {
      return [JSON.parse(line) as Record<string, unknown>];
    } catch {
      return [];
    }
  });
}
