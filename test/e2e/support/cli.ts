// `kangal-patch <args>` as a real child process (asynchronous: the lab's simulators run in this
// process and must keep answering while the CLI talks to them).
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { productEntry } from '../../support/product.js';

const root = fileURLToPath(new URL('../../..', import.meta.url));

/** Runs the compiled product (test/support/product.ts), as the image would. */
export async function runCli(args: string[], timeoutMs = 120_000): Promise<{ code: number; out: string; err: string }> {
  const entry = await productEntry();
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [entry, ...args],
      { cwd: root, timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : -1) : 0;
        resolve({ code, out: stdout, err: stderr });
      },
    );
  });
}
