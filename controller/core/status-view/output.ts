// `-o text|wide|json|yaml` of one status document. json and yaml print the document itself (the
// interface of document.ts); text and wide draw it. Pure.
import { stringify } from 'yaml';
import type { StatusDocument } from './document.js';
import type { TextOptions } from './sentences.js';
import { renderText } from './text.js';

export type OutputFormat = 'text' | 'wide' | 'json' | 'yaml';

/** The whole output, ending in a newline. */
export function renderStatus(doc: StatusDocument, format: OutputFormat, o: Omit<TextOptions, 'wide'>): string {
  switch (format) {
    case 'json':
      return `${JSON.stringify(doc, null, 2)}\n`;
    case 'yaml':
      return stringify(doc, { lineWidth: 0 });
    case 'text':
    case 'wide':
      return `${renderText(doc, { ...o, wide: format === 'wide' }).join('\n')}\n`;
  }
}

/** The document without what only the clock moves (its `time`, the seconds a running job has taken). */
const withoutClock = (doc: StatusDocument): string =>
  JSON.stringify(doc, (key, value: unknown) => (key === 'time' || key.startsWith('seconds') ? undefined : value));

/** Two documents that differ only in what the clock moves say the same: a watch prints the second one only when something happened. */
export function sameStatus(a: StatusDocument | undefined, b: StatusDocument): boolean {
  return a !== undefined && withoutClock(a) === withoutClock(b);
}
