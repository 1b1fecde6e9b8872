// Running `npm run demo` as CI does (stdout not a TTY, sub-second simulator timings) and reading
// its summary table: shared by the demo's e2e test (npm test) and the check of every scenario
// (`npm run demo:check`).
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { repoRoot } from '../support/manifests.js';

export interface DemoRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

export function runDemo(args: string[]): Promise<DemoRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', join(repoRoot, 'test/demo/main.ts'), '--timings', 'test', ...args],
      {
        cwd: repoRoot,
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

export const ROLLED = [
  'cp-1',
  'cp-2',
  'cp-3',
  'worker-1',
  'worker-2',
  'worker-3',
  'worker-4',
  'worker-5',
  'worker-6',
  'worker-7',
  'worker-8',
];

/** The summary table's row of `node`, split into its columns. */
export function summaryRow(stdout: string, node: string): string[] | undefined {
  const header = stdout
    .split('\n')
    .findIndex((l) => /^node\s+group\s+Talos\s+Kubernetes\s+cordoned\s+total\s+result$/.test(l));
  if (header < 0) return undefined;
  const row = stdout
    .split('\n')
    .slice(header + 2)
    .find((l) => l.startsWith(`${node} `));
  return row?.split(/\s{2,}/);
}

/** What a failed assertion prints: the exit code and the ends of both streams. */
export const demoContext = (run: DemoRun): string =>
  `exit ${String(run.code)}\nstdout:\n${run.stdout.slice(-4000)}\nstderr:\n${run.stderr.slice(-2000)}`;
