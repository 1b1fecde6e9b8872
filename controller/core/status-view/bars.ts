// One progress bar per group, in schedule order: completed (#), skipped (-), failed (x) and running
// (>) parts of the group's nodes, the rest (pending and held) as dots, then the counts. Pure.
import type { GroupEntry } from './document.js';
import type { TextOptions } from './sentences.js';

/** Bar cells of each part: cumulative rounding, so the parts always fill exactly `cells`. */
export function bar(
  g: Pick<GroupEntry, 'total' | 'completed' | 'skipped' | 'failed' | 'running'>,
  cells: number,
): string {
  if (g.total <= 0) return `[${' '.repeat(cells)}]`;
  const parts: [string, number][] = [
    ['#', g.completed],
    ['-', g.skipped],
    ['x', g.failed],
    ['>', g.running],
  ];
  let out = '';
  let sum = 0;
  for (const [ch, n] of parts) {
    sum += n;
    const upTo = Math.min(cells, Math.round((Math.min(sum, g.total) / g.total) * cells));
    out += ch.repeat(Math.max(0, upTo - out.length));
  }
  return `[${out.padEnd(cells, '.')}]`;
}

/** Bar cells for a width: what is left of the line after the indent, the name and the counts, from 8 to 30. */
function barCells(width: number, nameWidth: number, countsWidth: number): number {
  if (!Number.isFinite(width)) return 30;
  return Math.max(8, Math.min(30, width - 2 - nameWidth - 1 - 2 - 1 - countsWidth));
}

function counts(g: GroupEntry, wide: boolean): string {
  const named: [string, number][] = [
    ['running', g.running],
    ['failed', g.failed],
    ['held', g.held],
    ['pending', g.pending],
    ['skipped', g.skipped],
  ];
  // Text names only what is there; wide shows every count and the slots, so columns line up.
  const shown = wide ? named : named.filter(([, n]) => n > 0);
  const slots = wide && g.concurrency !== undefined ? [`slots ${g.active ?? 0}/${g.concurrency}`] : [];
  return [`${g.completed}/${g.total}`.padStart(wide ? 7 : 0), ...shown.map(([k, n]) => `${k} ${n}`), ...slots].join(
    '  ',
  );
}

export function groupLines(groups: readonly GroupEntry[], o: TextOptions): string[] {
  const nameWidth = Math.min(20, Math.max(0, ...groups.map((g) => g.name.length)));
  const texts = groups.map((g) => counts(g, o.wide));
  const cells = barCells(o.width, nameWidth, Math.max(0, ...texts.map((t) => t.length)));
  return groups.map((g, i) => `  ${g.name.padEnd(nameWidth)} ${bar(g, cells)} ${texts[i] ?? ''}`);
}
