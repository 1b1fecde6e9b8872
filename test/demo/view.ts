// What the demo prints itself, beside the product's status view (core/status-view): the elapsed-time
// stamp of its log, and the promotion story's two columns, soak countdown and proposal evidence.

export function duration(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0) return '-';
  const s = Math.round(ms / 1000);
  return s < 60 ? `${s}s` : `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
}

/** A promotion's soak: `version` runs on `upstream`; `cluster` may take it at `eligibleTime` (ISO). */
export interface Soak {
  cluster: string;
  version: string;
  upstream: string;
  eligibleTime: string;
}

/** The soak countdown: how long until `eligibleTime`, in whole seconds. */
export function soakLine({ cluster, version, upstream, eligibleTime }: Soak, nowMs: number): string {
  const left = Math.max(0, Math.ceil((Date.parse(eligibleTime) - nowMs) / 1000));
  return `soak: ${version} runs on ${upstream}; ${cluster} may take it at ${eligibleTime}: ${left > 0 ? `${left} s left` : 'now'}`;
}

/** Two columns of `width` characters in all: each line cut or padded to its half, a bar between. */
export function sideBySide(left: readonly string[], right: readonly string[], width: number): string[] {
  const half = Math.max(20, Math.floor((width - 3) / 2));
  const fit = (l: string): string => (l.length > half ? `${l.slice(0, half - 1)}…` : l.padEnd(half));
  return Array.from({ length: Math.max(left.length, right.length) }, (_, i) =>
    `${fit(left[i] ?? '')} │ ${fit(right[i] ?? '')}`.trimEnd(),
  );
}

/**
 * The "Promotion evidence" table of a proposal's body, for a terminal: per upstream stage, its
 * figures as `name: value` (a Markdown link printed as its URL), then the sentence above the table.
 */
export function evidenceLines(body: string): string[] {
  const lines = body.split('\n');
  const start = lines.findIndex((l) => l.trim() === '### Promotion evidence');
  if (start < 0) return ['(the proposal has no Promotion evidence section)'];
  const cells = (row: string): string[] =>
    row
      .trim()
      .replace(/^\|/, '')
      .replace(/\|$/, '')
      .split(/(?<!\\)\|/)
      .map((c) => c.trim().replace(/\\\|/g, '|'));
  const section = lines.slice(start + 1);
  const headerAt = section.findIndex((l) => l.startsWith('| '));
  const header = headerAt < 0 ? [] : cells(section[headerAt] ?? '');
  const rows =
    headerAt < 0
      ? []
      : section
          .slice(headerAt + 2)
          .filter((l, i, all) => l.startsWith('| ') && all.slice(0, i).every((x) => x.startsWith('| ')));
  const unlink = (c: string): string => c.replace(/\[([^\]]+)\]\(([^)]+)\)/g, '$2');
  const summary = section
    .slice(0, Math.max(0, headerAt))
    .map((l) => l.trim())
    .filter(Boolean);
  return [
    ...summary,
    ...rows.flatMap((row) => {
      const values = cells(row);
      return [
        `${header[0] ?? 'stage'} ${values[0] ?? '?'}:`,
        ...header.slice(1).map((h, i) => `  ${h}: ${unlink(values[i + 1] ?? '')}`),
      ];
    }),
  ];
}
