// The lab parts test/lab/prepare.sh builds before a run (`npm test`'s pretest, the benches', chaos'
// and `npm run lab`'s pre-scripts), found here and never built: each build script's `--check` prints
// where the part is, or exits non-zero saying what builds it. A test that needs a missing part fails at
// once with that sentence instead of building inside a hook and timing out.
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { runToEnd } from './process.js';

const scriptPath = (script: string): string => fileURLToPath(new URL(script, import.meta.url));
const lastLine = (out: string): string => out.trim().split('\n').at(-1) ?? '';

/** The last stdout line of `test/lab/<script> ...args --check` (a directory or an image reference). */
export async function builtPart(script: string, args: string[] = []): Promise<string> {
  const r = await runToEnd('bash', [scriptPath(script), ...args, '--check']);
  const found = lastLine(r.stdout);
  if (r.code !== 0 || found === '')
    throw new Error(r.stderr.trim() || `${script} ${args.join(' ')} --check exited ${String(r.code)}`);
  return found;
}

/** builtPart for callers that cannot wait (the cluster's start reads its bin directory synchronously). */
export function builtPartSync(script: string): string {
  try {
    const found = lastLine(
      execFileSync('bash', [scriptPath(script), '--check'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }),
    );
    if (found === '') throw new Error(`${script} --check printed nothing`);
    return found;
  } catch (err) {
    const stderr = (err as { stderr?: unknown }).stderr;
    throw new Error(typeof stderr === 'string' && stderr.trim() !== '' ? stderr.trim() : String(err), { cause: err });
  }
}
