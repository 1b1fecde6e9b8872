// Child processes and temp dirs of the lab that cannot outlive the test process: children get a
// parent-death signal (setpriv --pdeathsig), and each temp dir has a janitor that removes it when
// our end of its stdin pipe closes, which the kernel does when this process dies for any reason.
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface ManagedProcess {
  readonly name: string;
  readonly pid: number;
  readonly logPath: string;
  /** Resolves with the exit code (or null when killed by a signal). */
  readonly exited: Promise<number | null>;
  /** SIGTERM, then SIGKILL after `graceMs`. */
  stop(graceMs?: number): Promise<void>;
  /** The last lines the process logged, for error messages. */
  tail(lines?: number): string;
}

export interface SpawnOptions {
  logPath: string;
  env?: NodeJS.ProcessEnv;
  cwd?: string;
}

export function spawnManaged(name: string, command: string, args: string[], opts: SpawnOptions): ManagedProcess {
  const log = createWriteStream(opts.logPath, { flags: 'a' });
  const child: ChildProcess = spawn('setpriv', ['--pdeathsig', 'KILL', '--', command, ...args], {
    cwd: opts.cwd,
    env: opts.env ?? process.env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout?.pipe(log, { end: false });
  child.stderr?.pipe(log, { end: false });
  // The log ends when the pipes have (`close`), not at `exit`: output still in a pipe after the
  // process exited was written after the end and crashed the chaos runner (ERR_STREAM_WRITE_AFTER_END).
  child.once('close', () => log.end());
  log.on('error', (err) => process.stderr.write(`${name}: its log ${opts.logPath} failed: ${err.message}\n`));
  const exited = new Promise<number | null>((resolve) => {
    child.once('exit', (code) => resolve(code));
    child.once('error', (err) => {
      log.write(`spawn failed: ${err.message}\n`);
      resolve(-1);
    });
  });
  if (child.pid === undefined) throw new Error(`${name}: could not start ${command}`);
  const pid = child.pid;
  let stopping: Promise<void> | undefined;
  return {
    name,
    pid,
    logPath: opts.logPath,
    exited,
    stop(graceMs = 5000): Promise<void> {
      stopping ??= (async () => {
        if (child.exitCode !== null || child.signalCode !== null) return;
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
        await exited;
        clearTimeout(timer);
      })();
      return stopping;
    },
    tail(lines = 30): string {
      try {
        return readFileSync(opts.logPath, 'utf8').split('\n').slice(-lines).join('\n');
      } catch {
        return '';
      }
    },
  };
}

export interface LabDir {
  readonly path: string;
  remove(): void;
}

export function makeLabDir(prefix: string): LabDir {
  const path = mkdtempSync(join(tmpdir(), `${prefix}-`));
  // The janitor sits in its own session so a terminal's Ctrl-C does not kill it before it cleans up.
  const janitor = spawn('sh', ['-c', 'cat >/dev/null; rm -rf -- "$1"', 'janitor', path], {
    detached: true,
    stdio: ['pipe', 'ignore', 'ignore'],
  });
  janitor.unref();
  return {
    path,
    remove(): void {
      rmSync(path, { recursive: true, force: true });
      janitor.stdin?.end();
    },
  };
}

/** What a finished process printed, and its exit code (null: killed by a signal). */
export interface ProcessRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `command` to its end with `input` on stdin; never throws for a non-zero exit (only when it cannot start). */
export function runToEnd(
  command: string,
  args: string[],
  options: { env?: NodeJS.ProcessEnv; cwd?: string; input?: string; stderr?: 'pipe' | 'inherit' } = {},
): Promise<ProcessRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      stdio: ['pipe', 'pipe', options.stderr ?? 'pipe'],
      ...(options.env ? { env: options.env } : {}),
      ...(options.cwd ? { cwd: options.cwd } : {}),
    });
    let stdout = '';
    let stderr = '';
    child.stdout?.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    // A command that exits without reading its input (helm, most of them) closes the pipe first:
    // EPIPE on a stdin nobody reads is not an error of the run.
    child.stdin?.on('error', () => undefined);
    child.stdin?.end(options.input ?? '');
  });
}
