// `kangal-patch <args>` as a real child process (asynchronous: the lab's simulators run in this
// process and must keep answering while the CLI talks to them).
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../..', import.meta.url));

export function runCli(args: string[], timeoutMs = 120_000): Promise<{ code: number; out: string; err: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [`${root}bin/kangal-patch.js`, ...args], { cwd: root, timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : -1) : 0;
      resolve({ code, out: stdout, err: stderr });
    });
  });
}
