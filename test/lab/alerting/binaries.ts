// Alertmanager and promtool for the tests that need them: built from the Go module proxy into the
// lab cache by test/lab/gobuild/build-alerting.sh on first use (a cold build prints its progress on
// stderr), then reused. Not part of `npm test`'s pretest nor of the demo.
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runToEnd } from '../process.js';

const buildScript = fileURLToPath(new URL('../gobuild/build-alerting.sh', import.meta.url));
let built: Promise<string> | undefined;

function binDir(): Promise<string> {
  built ??= runToEnd('bash', [buildScript], { stderr: 'inherit' }).then((r) => {
    const dir = r.stdout.trim().split('\n').at(-1);
    if (r.code !== 0 || !dir) throw new Error(`${buildScript} failed (exit ${String(r.code)})`);
    return dir;
  });
  return built;
}

/** The path of the lab's alertmanager binary, building it when the cache lacks it. */
export const alertmanagerBinary = async (): Promise<string> => join(await binDir(), 'alertmanager');

/** The path of the lab's promtool binary, building it when the cache lacks it. */
export const promtoolBinary = async (): Promise<string> => join(await binDir(), 'promtool');
