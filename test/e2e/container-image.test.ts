// The shipped artifact end to end: the image built from the repository's Dockerfile (on the lab's
// Debian + Node 24 base) runs as a container the way kustomize/manager's Deployment runs it — uid
// 65532, read-only root filesystem, no capabilities, tmpfs where the pod has emptyDirs, the
// Deployment's args and environment (its ConfigMap included) read from `kubectl kustomize`, the
// ServiceAccount token of the rendered RBAC where a pod gets it, the Git Secret's files where the
// Deployment mounts them — and its replicas (two, leader-elected) complete a rollout from a plan
// pushed to Git, with its report PR: the leader's node is patched last, after it hands over to the
// standby. Host network instead of a pod network: the lab listens on loopback.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmodSync, chownSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { CoreV1Api } from '@kubernetes/client-node';
import { labBase, labImage, podman, removeOrphanContainers, runContainer, type Container } from '../lab/image/index.js';
import { IMAGE_ENV } from '../lab/image-env.js';
import { freePort } from '../lab/net.js';
import { waitFor } from '../lab/wait.js';
import { OPERATOR_NAMESPACE, parseObjects, repoRoot, SERVICE_ACCOUNT, type K8sObject } from '../support/manifests.js';
import { startJobLab, type JobLab } from './support/job-lab.js';
import { examplePlan, factoryImage, labPlan } from './support/plans.js';

const TARGET = 'v1.13.2';
const RBAC_KINDS = ['ServiceAccount', 'ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding'];
const NODES = ['cp-1', 'worker-1', 'worker-2'];
/** The nodes the replicas run on (spec.nodeName): the first one leads, and its node is patched last. */
const POD_NODES = ['worker-1', 'cp-1'];
/** The ConfigMap keys a user fills in for their plans repository and forge; every other key is used as rendered. */
const USER_SETTINGS = [
  'KANGAL_PATCH_CLUSTER_NAME',
  'KANGAL_PATCH_GIT_URL',
  'KANGAL_PATCH_POLL_INTERVAL',
  'KANGAL_PATCH_FORGE_API_URL',
];
const UID = 65532;

interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: { fieldRef?: { fieldPath: string } };
}
interface Mount {
  name: string;
  mountPath: string;
  readOnly?: boolean;
}
interface Probe {
  httpGet: { path: string; port: string | number };
}
interface ContainerSpec {
  args: string[];
  env: EnvVar[];
  envFrom: { configMapRef?: { name: string } }[];
  ports: { name: string; containerPort: number }[];
  livenessProbe: Probe;
  readinessProbe: Probe;
  volumeMounts: Mount[];
  securityContext: {
    readOnlyRootFilesystem: boolean;
    runAsNonRoot: boolean;
    allowPrivilegeEscalation: boolean;
    capabilities: { drop: string[] };
  };
}
interface PodSpec {
  serviceAccountName: string;
  securityContext: { runAsUser: number; runAsGroup: number };
  containers: ContainerSpec[];
  volumes: { name: string; emptyDir?: object; secret?: { secretName: string } }[];
}
interface Replica {
  container: Container;
  hostPorts: Map<number, number>;
  coldStartMs: number;
}
interface Pull {
  number: number;
  state: string;
  draft: boolean;
  title: string;
  head: { ref: string };
}

describe('The container image: built from the Dockerfile, run as the Deployment runs it, rolls out a plan from Git', function () {
  this.timeout(600_000);
  let lab: JobLab;
  let image: string;
  /** The replicas, in start order (the first leads at first). */
  const replicas: Replica[] = [];
  let spec: ContainerSpec;
  let pod: PodSpec;
  let config: Record<string, string>;
  let mounts: { source: string; target: string }[];
  let tmpfs: string[];

  const kubectl = (args: string[], input?: string): string =>
    execFileSync(lab.cluster.kubectl, ['--kubeconfig', lab.cluster.kubeconfigPath, ...args], {
      encoding: 'utf8',
      input,
      cwd: repoRoot,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
  const api = async <T>(path: string): Promise<T> => {
    const forge = lab.forge!;
    const res = await fetch(`${forge.apiUrl}${path}`, {
      headers: { authorization: `token ${forge.token}`, accept: 'application/vnd.github+json' },
    });
    assert.equal(res.status, 200, `GET ${path}`);
    return (await res.json()) as T;
  };
  const portOf = (probe: Probe): number => {
    const p = probe.httpGet.port;
    const port = typeof p === 'number' ? p : spec.ports.find((x) => x.name === p)?.containerPort;
    assert.ok(port !== undefined, `probe port ${p} is a container port`);
    return port;
  };
  /** GET from inside the container, with the image's own node (it has no curl). */
  const getInside = async (
    container: Container,
    port: number,
    path: string,
  ): Promise<{ status: number; body: string }> => {
    const script = `const r = await fetch('http://127.0.0.1:${port}${path}'); process.stdout.write(JSON.stringify({ status: r.status, body: await r.text() }));`;
    const r = await container.exec(['node', '--input-type=module', '-e', script]);
    assert.equal(r.code, 0, `podman exec: ${r.stderr}`);
    return JSON.parse(r.stdout) as { status: number; body: string };
  };

  /** The files a pod of the Deployment gets mounted, written for the container: directories `sa` and `git`. */
  const writePodFiles = async (): Promise<{ sa: string; git: string }> => {
    // The ServiceAccount token, CA and namespace, as the kubelet projects them into a pod.
    const dir = join(lab.cluster.dir, 'container');
    const sa = join(dir, 'serviceaccount');
    const git = join(dir, 'git');
    mkdirSync(sa, { recursive: true });
    mkdirSync(git, { recursive: true });
    const token = await lab.kc.makeApiClient(CoreV1Api).createNamespacedServiceAccountToken({
      name: pod.serviceAccountName,
      namespace: OPERATOR_NAMESPACE,
      body: { spec: { audiences: [], expirationSeconds: 3600 } },
    });
    writeFileSync(join(sa, 'token'), token.status?.token ?? '');
    writeFileSync(join(sa, 'ca.crt'), lab.cluster.caPem);
    writeFileSync(join(sa, 'namespace'), OPERATOR_NAMESPACE);
    // The kangal-patch-git Secret's keys as files, mode 0440 and group fsGroup as the Deployment mounts it.
    const secret = { token: lab.forge!.token, 'write-token': lab.forge!.token, 'webhook-secret': 'lab-webhook-secret' };
    for (const [key, value] of Object.entries(secret)) writeFileSync(join(git, key), value);
    for (const d of [sa, git]) {
      chownSync(d, 0, UID);
      chmodSync(d, 0o750);
      for (const f of Object.keys(d === sa ? { token: 1, 'ca.crt': 1, namespace: 1 } : secret)) {
        chownSync(join(d, f), 0, UID);
        chmodSync(join(d, f), 0o440);
      }
    }
    return { sa, git };
  };

  /**
   * Starts replica `i` as the Deployment's pod template describes it, on node POD_NODES[i]; resolves
   * once its readiness probe answers 200.
   */
  const startReplica = async (i: number): Promise<Replica> => {
    // The environment: the ConfigMap with the user's settings for the lab's repository and forge,
    // then the Deployment's env with its fieldRefs resolved as the kubelet does.
    const cloneUrl = `${lab.forge!.url}/acme/plans.git`;
    const env: Record<string, string> = {
      ...config,
      KANGAL_PATCH_CLUSTER_NAME: 'lab',
      KANGAL_PATCH_GIT_URL: cloneUrl,
      KANGAL_PATCH_POLL_INTERVAL: '2s',
      KANGAL_PATCH_FORGE_API_URL: lab.forge!.apiUrl,
    };
    assert.deepEqual(
      Object.keys(env)
        .filter((k) => env[k] !== config[k])
        .sort(),
      [...USER_SETTINGS].sort(),
      'only the user settings differ from the rendered ConfigMap',
    );
    const name = `kangal-patch-controller-${i}`;
    const fields: Record<string, string> = {
      'metadata.namespace': OPERATOR_NAMESPACE,
      'spec.nodeName': POD_NODES[i]!,
      'metadata.name': name,
      'spec.serviceAccountName': 'kangal-patch-controller',
    };
    for (const e of spec.env) {
      if (e.value !== undefined) env[e.name] = e.value;
      else if (e.valueFrom?.fieldRef)
        env[e.name] =
          fields[e.valueFrom.fieldRef.fieldPath] ?? assert.fail(`fieldRef ${e.valueFrom.fieldRef.fieldPath}`);
      else assert.fail(`env ${e.name} has no lab counterpart`);
    }
    // The host network has no pod of its own: each bind address ":PORT" moves to a free host port.
    const hostPorts = new Map<number, number>();
    for (const p of spec.ports) hostPorts.set(p.containerPort, await freePort());
    for (const [k, v] of Object.entries(env)) {
      const m = /^:(\d+)$/.exec(v);
      if (m && hostPorts.has(Number(m[1]))) env[k] = `:${hostPorts.get(Number(m[1]))}`;
    }
    // In a pod the kubelet sets these for the kubernetes Service; here it is the lab apiserver.
    const server = new URL(lab.cluster.server);
    env['KUBERNETES_SERVICE_HOST'] = server.hostname;
    env['KUBERNETES_SERVICE_PORT'] = server.port;
    // The lab's installer images are in the lab registry (a user's mirror setting, as a flag's env).
    env['KANGAL_PATCH_REGISTRY_MIRROR'] = lab.mirrorArgs.filter((a) => a !== '--registry-mirror').join(',');

    const started = Date.now();
    const container = runContainer({
      name: `${name}-${process.pid}`,
      image,
      args: spec.args,
      env,
      mounts,
      tmpfs,
      user: `${pod.securityContext.runAsUser}:${pod.securityContext.runAsGroup}`,
      logPath: join(lab.cluster.dir, `${name}.log`),
    });
    replicas.push({ container, hostPorts, coldStartMs: 0 });
    const readyPort = hostPorts.get(portOf(spec.readinessProbe))!;
    await waitFor(
      async () =>
        (await fetch(`http://127.0.0.1:${readyPort}${spec.readinessProbe.httpGet.path}`)).status === 200 || undefined,
      {
        timeoutMs: 60_000,
        intervalMs: 50,
        description: `${name}: ${spec.readinessProbe.httpGet.path} answering 200`,
      },
    ).catch((err: unknown) => {
      throw new Error(`${(err as Error).message}\n${container.process.tail(30)}`, { cause: err });
    });
    const replica = replicas.at(-1)!;
    replica.coldStartMs = Date.now() - started;
    return replica;
  };

  before(async function () {
    const built = Date.now();
    image = await labImage();
    const orphans = await removeOrphanContainers();
    if (orphans.length > 0) console.log(`      removed containers of killed test runs: ${orphans.join(', ')}`);
    console.log(`      image ${image} ready in ${Date.now() - built} ms`);
    lab = await startJobLab({
      fleet: { nodes: 3, controlPlanes: 1, talosVersion: 'v1.12.4' },
      images: [factoryImage('nocloud', TARGET)],
      workloads: [{ namespace: 'shop', name: 'web', kind: 'replicaset', replicas: 2, pdb: { maxUnavailable: 1 } }],
      plansRepo: true,
    });
    const rendered = parseObjects(kubectl(['kustomize', 'kustomize/default']), 'kubectl kustomize kustomize/default');
    kubectl(
      ['apply', '--server-side', '-f', '-'],
      rendered
        .filter((o) => RBAC_KINDS.includes(o.kind))
        .map((o) => stringify(o))
        .join('---\n'),
    );
    const deployment = rendered.find(
      (o) => o.kind === 'Deployment' && o.metadata.name === 'kangal-patch-controller',
    ) as K8sObject & { spec: { template: { spec: PodSpec } } };
    assert.ok(deployment, 'the rendered manifests have the controller Deployment');
    assert.equal(deployment.metadata.namespace, OPERATOR_NAMESPACE);
    pod = deployment.spec.template.spec;
    assert.equal(pod.containers.length, 1);
    spec = pod.containers[0]!;
    assert.equal(pod.serviceAccountName, SERVICE_ACCOUNT);
    const configMaps = spec.envFrom.map((e) => e.configMapRef?.name);
    const configMap = rendered.find((o) => o.kind === 'ConfigMap' && configMaps.includes(o.metadata.name)) as
      (K8sObject & { data: Record<string, string> }) | undefined;
    assert.ok(configMap, `the rendered manifests have the ConfigMap ${configMaps.join(', ')}`);
    config = configMap.data;
  });
  after(async function () {
    for (const r of replicas) await r.container.remove();
    for (const r of replicas) {
      const left = await podman(['ps', '--all', '--filter', `name=^${r.container.name}$`, '--format', '{{.Names}}']);
      assert.equal(left.stdout.trim(), '', `container ${r.container.name} is gone`);
    }
    await lab?.stop();
  });

  it("is a non-root image on the base, with the runtime environment the benches measured (malloc, heap) and the Deployment's ports, and within 20 MB of its base (the bundle, no node_modules)", async function () {
    const inspect = JSON.parse((await podman(['image', 'inspect', image])).stdout) as {
      Size: number;
      Config: { User: string; Env: string[]; ExposedPorts: Record<string, object>; Entrypoint: string[] };
    }[];
    const [img] = inspect;
    assert.ok(img);
    assert.equal(img.Config.User, `${UID}:${UID}`);
    for (const [name, value] of Object.entries(IMAGE_ENV))
      assert.ok(
        img.Config.Env.includes(`${name}=${value}`),
        `${name}=${value} (test/lab/image-env.ts; the benches run the controller with it): ${img.Config.Env.join(' ')}`,
      );
    assert.equal(pod.securityContext.runAsUser, UID, "the Deployment runs the image's uid");
    for (const p of spec.ports)
      assert.ok(`${p.containerPort}/tcp` in img.Config.ExposedPorts, `port ${p.name} exposed`);
    const base = (await podman(['image', 'inspect', '--format', '{{.Size}}', await labBase()])).stdout.trim();
    const overBase = img.Size - Number(base);
    console.log(`      image ${(img.Size / 1e6).toFixed(1)} MB, ${(overBase / 1e6).toFixed(1)} MB over the base`);
    // 7.5 MB with the bundle; node_modules back in the image would make it 65 MB.
    assert.ok(overBase > 0 && overBase <= 20e6, `${overBase} bytes over the base`);
  });

  it("runs with the Deployment's args, environment and mounts, and is ready", async function () {
    const { sa, git } = await writePodFiles();

    // Volumes: emptyDirs become tmpfs, the Git Secret its files; the root filesystem stays read-only.
    assert.equal(spec.securityContext.readOnlyRootFilesystem, true);
    assert.deepEqual(spec.securityContext.capabilities.drop, ['ALL']);
    assert.equal(spec.securityContext.allowPrivilegeEscalation, false);
    tmpfs = [];
    mounts = [{ source: sa, target: '/var/run/secrets/kubernetes.io/serviceaccount' }];
    for (const m of spec.volumeMounts) {
      const volume = pod.volumes.find((v) => v.name === m.name);
      if (volume?.emptyDir) tmpfs.push(m.mountPath);
      else if (volume?.secret?.secretName === 'kangal-patch-git') mounts.push({ source: git, target: m.mountPath });
      else assert.fail(`volume ${m.name} has no lab counterpart`);
    }
    assert.ok(tmpfs.includes('/var/cache/kangal-patch') && tmpfs.includes('/tmp'), tmpfs.join(', '));

    const first = await startReplica(0);
    console.log(`      container start → ${spec.readinessProbe.httpGet.path} 200: ${first.coldStartMs} ms`);
    const { container, hostPorts } = first;
    const readyPort = hostPorts.get(portOf(spec.readinessProbe))!;

    // The probes and the metrics endpoint, from inside the container.
    const live = await getInside(
      container,
      hostPorts.get(portOf(spec.livenessProbe))!,
      spec.livenessProbe.httpGet.path,
    );
    assert.equal(live.status, 200, live.body);
    const ready = await getInside(container, readyPort, spec.readinessProbe.httpGet.path);
    assert.equal(ready.status, 200, ready.body);
    const metricsPort = hostPorts.get(spec.ports.find((p) => p.name === 'metrics')!.containerPort)!;
    const metrics = await getInside(container, metricsPort, '/metrics');
    assert.equal(metrics.status, 200);
    assert.match(metrics.body, /^# HELP /m);
    assert.match(metrics.body, /^kangal_patch_\w+/m);
    // Who it runs as, and that it cannot write outside its tmpfs.
    assert.equal(
      (await container.exec(['node', '-p', 'process.getuid() + ":" + process.getgid()'])).stdout.trim(),
      `${UID}:${UID}`,
    );
    const write = await container.exec(['node', '-e', 'require("node:fs").writeFileSync("/app/x", "")']);
    assert.notEqual(write.code, 0);
    assert.match(write.stderr, /EROFS|read-only/);
    // What it runs: the bundle and no node_modules, with the dependencies' license texts beside it.
    const ls = await container.exec([
      'node',
      '-e',
      'const fs = require("node:fs"); process.stdout.write(JSON.stringify({ app: fs.readdirSync("/app").sort(), dist: fs.readdirSync("/app/dist") }))',
    ]);
    assert.deepEqual(JSON.parse(ls.stdout), {
      app: ['THIRD_PARTY_LICENSES', 'bin', 'dist', 'package.json'],
      dist: ['kangal-patch.mjs'],
    });
    const licenses = await container.exec([
      'node',
      '-e',
      'process.stdout.write(require("node:fs").readFileSync("/app/THIRD_PARTY_LICENSES", "utf8"))',
    ]);
    assert.match(licenses.stdout, /^@kubernetes\/client-node@\S+ \(Apache-2\.0\)$/m);
    assert.match(licenses.stdout, /^zod@\S+ \(MIT\)\n=+\n\n--- LICENSE/m);
  });

  it('two replicas, as the Deployment has, complete a rollout from a plan pushed to Git, with its report pull request', async function () {
    assert.equal(replicas.length, 1, 'the first replica runs');
    const leader = replicas[0]!;
    await waitFor(() => leader.container.process.tail(200).includes('"leading') || undefined, {
      timeoutMs: 30_000,
      description: 'the first replica leading',
    });
    const standby = await startReplica(1);
    assert.equal(POD_NODES.length, 2, 'one node per replica (the anti-affinity)');
    const logs = (): string =>
      replicas.map((r) => `--- ${r.container.name}\n${r.container.process.tail(25)}`).join('\n');

    const example = examplePlan('simple-upgrade.yaml');
    const target = { ...(example.spec.target as Record<string, unknown>), talosVersion: TARGET };
    await lab.plans!.write(
      'plans/simple-upgrade.yaml',
      stringify(labPlan(example, lab.talos.endpoint, { target, drainTimeout: '2m' })),
    );
    const sha = await lab.plans!.commitAndPush('add the simple-upgrade plan');
    const status = await lab
      .waitForPlan(
        'simple-upgrade',
        'Completed or Failed',
        (s) => s.phase === 'Completed' || s.phase === 'Failed',
        300_000,
      )
      .catch((err: unknown) => {
        throw new Error(`${(err as Error).message}\ncontainer logs:\n${logs()}`, { cause: err });
      });
    assert.equal(status.phase, 'Completed', JSON.stringify(status));
    assert.equal(status.completedNodes, NODES.length);
    // What really happened, from the independent observer.
    await waitFor(
      () =>
        (lab.observer.liveLeases().length === 0 && NODES.every((n) => lab.observer.node(n)?.unschedulable === false)) ||
        undefined,
      {
        timeoutMs: 30_000,
        description: 'every slot Lease released and every node uncordoned',
      },
    );
    for (const n of NODES) assert.equal(lab.observer.node(n)?.osImage, `Talos (${TARGET})`, n);
    assert.ok(
      lab.observer.maxConcurrentLeasesInGroup('simple-upgrade', 'controlPlane') <= 1,
      'control plane one at a time',
    );
    assert.ok(
      lab.observer.maxConcurrentLeasesInGroup('simple-upgrade', 'workers') <= 2,
      'workers at most two at a time',
    );
    // The leader's node is scheduled last (its slot Lease is the last one created, by the new leader
    // after the handover). Cordons are no order: with workers at concurrency 2 the other worker's
    // job may cordon after it.
    const scheduled = lab.observer.events.filter((e) => e.kind === 'leaseCreated').map((e) => e.node);
    assert.equal(
      scheduled.at(-1),
      `simple-upgrade-${POD_NODES[0]}`,
      `the leader's node is scheduled last: ${scheduled.join(', ')}`,
    );

    const pull = await waitFor(
      async () => {
        const pulls = (await api<Pull[]>('/repos/acme/plans/pulls?state=all')).filter((p) =>
          p.head.ref.startsWith('kangal-patch/lab/report/simple-upgrade-'),
        );
        return pulls.length === 1 && pulls[0]?.draft === false ? pulls[0] : undefined;
      },
      { timeoutMs: 90_000, description: 'the report PR, ready for review' },
    ).catch(async (err: unknown) => {
      const pulls = await api<Pull[]>('/repos/acme/plans/pulls?state=all').catch((e: unknown) => String(e));
      throw new Error(
        `${(err as Error).message}\npull requests: ${JSON.stringify(pulls)}\ncontainer logs:\n${logs()}`,
        { cause: err },
      );
    });
    assert.match(pull.title, /\[lab\]/);
    const statuses = await api<{ state: string; context: string }[]>(`/repos/acme/plans/commits/${sha}/statuses`);
    assert.ok(
      statuses.some((s) => s.context === 'kangal-patch/lab' && s.state === 'success'),
      JSON.stringify(statuses),
    );
    assert.deepEqual(lab.forge!.violations, [], "every forge request matched GitHub's OpenAPI description");

    // The first leader handed over before its node was drained and exited 0 (its pod would restart
    // as a standby); the standby led to the end, and SIGTERM (what the kubelet sends) ends it cleanly.
    assert.equal(await leader.container.process.exited, 0);
    assert.match(readFileSync(leader.container.process.logPath, 'utf8'), /handed over/);
    await standby.container.process.stop(30_000);
    assert.equal(await standby.container.process.exited, 0);
    for (const r of replicas) {
      const log = readFileSync(r.container.process.logPath, 'utf8');
      assert.deepEqual(
        log.split('\n').filter((l) => /\b403\b|forbidden|Unauthorized/i.test(l)),
        [],
        `no request of ${r.container.name} was refused`,
      );
      assert.ok(!log.includes(lab.forge!.token), `no token in the log of ${r.container.name}`);
      assert.ok(log.includes('"leading'), `${r.container.name} led`);
    }
  });
});
