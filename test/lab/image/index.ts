// The controller's container image in the lab: built by build.sh from the repository's Dockerfile
// (cached by its inputs in the lab cache), run with podman as a pod would run it. Imports nothing
// from controller/.
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { builtPart } from '../built.js';
import { spawnManaged, type ManagedProcess } from '../process.js';

const SCRIPT = fileURLToPath(new URL('./build.sh', import.meta.url));

/** The controller image of the working tree, as test/lab/prepare.sh built it before the run; rejects, saying what builds it, when it is missing. */
export function labImage(): Promise<string> {
  return builtPart('./image/build.sh', ['lab']);
}

/** The lab's Node 24 base image the controller image is built on (build.sh base), found, never built. */
export function labBase(): Promise<string> {
  return builtPart('./image/build.sh', ['base']);
}

export interface PodmanResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** podman on the lab's store (build.sh podman); never throws for a non-zero exit. */
export function podman(args: string[]): Promise<PodmanResult> {
  return new Promise((resolve) => {
    execFile('bash', [SCRIPT, 'podman', ...args], { maxBuffer: 16 << 20 }, (err, stdout, stderr) => {
      const code = err
        ? typeof (err as { code?: unknown }).code === 'number'
          ? (err as { code: number }).code
          : 1
        : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

/** The hard limits of this process (/proc/self/limits), which a container cannot exceed without CAP_SYS_RESOURCE. */
function hardLimit(name: string): number {
  const line = readFileSync('/proc/self/limits', 'utf8')
    .split('\n')
    .find((l) => l.startsWith(name));
  const hard = line?.slice(name.length).trim().split(/\s+/)[1];
  return hard === undefined || hard === 'unlimited' ? Number.POSITIVE_INFINITY : Number(hard);
}

export interface ContainerOptions {
  name: string;
  image: string;
  /** Arguments after the image (the container's args, replacing CMD). */
  args: string[];
  env: Record<string, string>;
  /** Host directory → read-only mount point. */
  mounts: { source: string; target: string }[];
  /** Writable tmpfs mount points (a pod's emptyDirs). */
  tmpfs: string[];
  /** uid:gid, as the pod's runAsUser/runAsGroup. */
  user: string;
  /** Where the container's stdout and stderr go. */
  logPath: string;
}

export interface Container {
  readonly name: string;
  /** The attached `podman run` (SIGTERM is passed on to the container's process). */
  readonly process: ManagedProcess;
  exec(command: string[]): Promise<PodmanResult>;
  /** Stops (SIGTERM, then SIGKILL after `graceMs`) and removes the container; idempotent. */
  remove(graceMs?: number): Promise<void>;
}

const LAB_LABEL = 'kangal-lab.container';

/**
 * Removes the lab containers whose test process is gone (it was killed before its after() hook:
 * the attached podman dies with it, the container does not). Containers of running tests stay.
 */
export async function removeOrphanContainers(): Promise<string[]> {
  const listed = await podman([
    'ps',
    '--all',
    '--filter',
    `label=${LAB_LABEL}`,
    '--format',
    `{{.Names}} {{index .Labels "${LAB_LABEL}"}}`,
  ]);
  const orphans = listed.stdout.split('\n').flatMap((line) => {
    const [name, pid] = line.trim().split(' ');
    if (!name || !pid) return [];
    try {
      process.kill(Number(pid), 0);
      return [];
    } catch {
      return [name];
    }
  });
  if (orphans.length > 0) await podman(['rm', '--force', '--ignore', '--time', '0', ...orphans]);
  return orphans;
}

/**
 * Runs `image` as a Kubernetes pod with the restricted security profile runs it: a non-root uid,
 * a read-only root filesystem, no capabilities, no privilege escalation, the default seccomp
 * profile, tmpfs where the pod has emptyDirs. Host network: the lab listens on loopback.
 * No cgroups (see build.sh) and rlimits within this machine's hard limits.
 */
export function runContainer(o: ContainerOptions): Container {
  const nofile = Math.min(hardLimit('Max open files'), 65_536);
  const nproc = Math.min(hardLimit('Max processes'), 4096);
  const args = [
    SCRIPT,
    'podman',
    'run',
    '--rm',
    '--pull',
    'never',
    '--name',
    o.name,
    '--label',
    `${LAB_LABEL}=${process.pid}`,
    '--cgroups=disabled',
    '--ulimit',
    `nofile=${nofile}:${nofile}`,
    '--ulimit',
    `nproc=${nproc}:${nproc}`,
    '--network',
    'host',
    '--user',
    o.user,
    '--read-only',
    '--read-only-tmpfs=false',
    '--cap-drop',
    'ALL',
    '--security-opt',
    'no-new-privileges',
    ...o.tmpfs.flatMap((t) => ['--tmpfs', `${t}:rw,nosuid,nodev,mode=1777`]),
    ...o.mounts.flatMap((m) => ['--volume', `${m.source}:${m.target}:ro`]),
    ...Object.entries(o.env).flatMap(([k, v]) => ['--env', `${k}=${v}`]),
    o.image,
    ...o.args,
  ];
  const process_ = spawnManaged(o.name, 'bash', args, { logPath: o.logPath });
  let removing: Promise<void> | undefined;
  return {
    name: o.name,
    process: process_,
    exec: (command) => podman(['exec', o.name, ...command]),
    remove(graceMs = 10_000) {
      removing ??= (async () => {
        await process_.stop(graceMs);
        // The attached podman may be gone while the container is not (SIGKILLed podman): remove it by name.
        await podman(['rm', '--force', '--ignore', '--time', String(Math.ceil(graceMs / 1000)), o.name]);
      })();
      return removing;
    },
  };
}
