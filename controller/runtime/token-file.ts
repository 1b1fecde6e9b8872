// Tokens come from files (a mounted Secret), read on every use so a rotated token is picked up
// without a restart. The token's value never appears in a message.
import { readFile } from 'node:fs/promises';
import { OutcomeError, OutcomeKind } from './outcome.js';

/** The token in `file` (named by `flag` in errors); a missing or malformed file is Stalled with `reason`. */
export async function readTokenFile(
  file: string | undefined,
  flag: string,
  reason: string,
): Promise<string | undefined> {
  if (file === undefined) return undefined;
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    const code = (err as { code?: unknown }).code;
    const why = typeof code === 'string' ? code : 'unreadable';
    throw new OutcomeError({
      kind: OutcomeKind.Stalled,
      reason,
      message: `cannot read the token file ${file} (${flag}): ${why}`,
      cause: err,
    });
  }
  const token = text.trim();
  if (token === '' || /[\s]/.test(token)) {
    throw new OutcomeError({
      kind: OutcomeKind.Stalled,
      reason,
      message: `the token file ${file} (${flag}) must hold one token on one line`,
    });
  }
  return token;
}
