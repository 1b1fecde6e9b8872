// Reading --notify-config-file: YAML (or JSON) validated by schemas/notify.ts. Errors name the file
// and the field, never a value (the file holds URLs and secrets).
import { readFile } from 'node:fs/promises';
import { parse } from 'yaml';
import { formatPath } from '../../schemas/field-path.js';
import { notifyConfig, type NotifyConfig } from '../../schemas/notify.js';

/** The parsed config, or one message per problem (`<file>: receivers[1].url: must be ...`). */
export function parseNotifyConfig(text: string, file: string): NotifyConfig | { errors: string[] } {
  let raw: unknown;
  try {
    raw = parse(text, { version: '1.2', uniqueKeys: true, merge: false, prettyErrors: false });
  } catch (err) {
    // yaml's messages quote the offending source line, which may be a URL or a secret: keep the position only.
    const pos = (err as { linePos?: { line: number; col: number }[] }).linePos?.[0];
    return {
      errors: [
        `${file}${pos ? `:${pos.line}:${pos.col}` : ''}: not valid YAML (${(err as { code?: string }).code ?? 'parse error'})`,
      ],
    };
  }
  const parsed = notifyConfig.safeParse(raw ?? {});
  if (parsed.success) return parsed.data;
  return { errors: parsed.error.issues.map((i) => `${file}: ${formatPath(i.path) || '(top level)'}: ${i.message}`) };
}

export async function loadNotifyConfig(file: string): Promise<NotifyConfig | { errors: string[] }> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    return { errors: [`${file}: cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'})`] };
  }
  return parseNotifyConfig(text, file);
}
