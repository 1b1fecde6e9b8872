// Alertmanager and promtool for the tests that need them: built from the Go module proxy into the
// lab cache by test/lab/gobuild/build-alerting.sh, which `npm test`'s set-up (test/lab/prepare.sh)
// runs before the first test; found here, never built.
import { join } from 'node:path';
import { builtPart } from '../built.js';

let built: Promise<string> | undefined;

const binDir = (): Promise<string> => (built ??= builtPart('./gobuild/build-alerting.sh'));

/** The path of the lab's alertmanager binary; rejects, saying what builds it, when the cache lacks it. */
export const alertmanagerBinary = async (): Promise<string> => join(await binDir(), 'alertmanager');

/** The path of the lab's promtool binary; rejects, saying what builds it, when the cache lacks it. */
export const promtoolBinary = async (): Promise<string> => join(await binDir(), 'promtool');
