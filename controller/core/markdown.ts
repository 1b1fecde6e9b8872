// Text from outside the controller made inert in Markdown: plan, group and node names, status and
// check messages, file paths, commit authors, upstream reports. Reports and pull requests (GitHub,
// Gitea: CommonMark + GFM) and chat cards (Teams, Discord) render Markdown; a plan author must not
// be able to put a link, an image, HTML, a table cell or a code span into them. The one escaping
// function for all of them; Slack's mrkdwn is not Markdown (core/notify/format.ts slackEscape).

/**
 * Characters that open inline markup: emphasis, code, links and images, HTML and autolinks, GFM
 * tables and strikethrough (and the backslash itself). Escaped with a backslash, which CommonMark
 * allows before any ASCII punctuation and which renders as the character alone.
 */
const INLINE = /[\\`*_[\]<>|~]/g;

/** What opens a block at the start of a line: heading, quote, list item, setext underline. */
const LINE_START = /^([ \t]*)([#>+=-]|\d{1,9}(?=[.)]))/gm;

/** `text` as literal Markdown text (inline, newlines kept). */
export function escapeMarkdown(text: string): string {
  return text
    .replace(INLINE, (c) => `\\${c}`)
    .replace(LINE_START, (_m, indent: string, marker: string) =>
      /^\d/.test(marker) ? `${indent}${marker}\\` : `${indent}\\${marker}`,
    );
}

/**
 * `text` as literal text inside one line (a table cell, after a heading's marker, in a sentence):
 * escaped, newlines made spaces. Nothing in it starts a line, so block markers stay as they are.
 */
export function markdownCell(text: string): string {
  return text.replace(/\r?\n|\r/g, ' ').replace(INLINE, (c) => `\\${c}`);
}

/**
 * `text` as a code span: a fence longer than any run of backticks inside, so nothing in it ends the
 * span early (a code span shows everything else literally). In a table cell pipes still split the
 * row, so `inCell` escapes them (GFM removes that backslash inside code spans).
 */
export function markdownCode(text: string, inCell = false): string {
  const line = text.replace(/\r?\n|\r/g, ' ');
  const longest = Math.max(0, ...[...line.matchAll(/`+/g)].map((m) => m[0].length));
  const fence = '`'.repeat(longest + 1);
  const pad = line.startsWith('`') || line.endsWith('`') || line === '' ? ' ' : '';
  const body = inCell ? line.replace(/\|/g, '\\|') : line;
  return `${fence}${pad}${body}${pad}${fence}`;
}

/** A link whose text is escaped and whose destination cannot end early or break out of the link. */
export function markdownLink(text: string, url: string): string {
  const dest = url.replace(/[()<>\s"'\\`|]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`);
  return `[${markdownCell(text)}](${dest})`;
}
