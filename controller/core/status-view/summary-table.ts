// The table at the end of a rollout: per node, versions before → after, time cordoned, time in
// all, result. Columns that do not fit the width are left out, least needed first, so the result
// column is never the one cut off. Pure.
import type { NodeEntry, VersionChange } from './document.js';
import { change } from './sentences.js';
import { duration } from './time-text.js';

interface Column {
  header: string;
  cell(n: NodeEntry): string;
}

const secs = (s: number | undefined): string => (s === undefined ? '-' : duration(s * 1000));
/** Before → after; a version read on both sides and the same says so, so a reader does not wonder whether it moved. */
const result = (v: VersionChange): string =>
  v.before !== undefined && v.before === v.after ? `${v.before} (unchanged)` : change(v, 'after');

const COLUMNS: Record<string, Column> = {
  node: { header: 'node', cell: (n) => n.node },
  group: { header: 'group', cell: (n) => n.group },
  talos: { header: 'Talos', cell: (n) => result(n.talos) },
  kubernetes: { header: 'Kubernetes', cell: (n) => result(n.kubernetes) },
  cordoned: { header: 'cordoned', cell: (n) => (n.secondsCordoned === undefined ? 'never' : secs(n.secondsCordoned)) },
  total: { header: 'total', cell: (n) => secs(n.secondsTotal) },
  result: { header: 'result', cell: (n) => (n.leftCordoned ? `${n.phase} (left cordoned)` : n.phase) },
};
const ORDER = ['node', 'group', 'talos', 'kubernetes', 'cordoned', 'total', 'result'];
/** Left out first when the table is too wide: the group, a version no node changed, the times, then the versions. */
function dropOrder(nodes: readonly NodeEntry[]): string[] {
  const moved = (k: 'talos' | 'kubernetes'): boolean => nodes.some((n) => change(n[k], 'after').includes('→'));
  const still = (['talos', 'kubernetes'] as const).filter((k) => !moved(k));
  return ['group', ...still, 'total', 'cordoned', ...(['kubernetes', 'talos'] as const).filter((k) => moved(k))];
}

function table(nodes: readonly NodeEntry[], keys: readonly string[], indent: string): string[] {
  const cols = keys.map((k) => COLUMNS[k] as Column);
  const cells = nodes.map((n) => cols.map((c) => c.cell(n)));
  const widths = cols.map((c, i) => Math.max(c.header.length, ...cells.map((row) => (row[i] ?? '').length)));
  const line = (row: readonly string[]): string =>
    indent +
    row
      .map((x, i) => x.padEnd(widths[i] ?? 0))
      .join('  ')
      .trimEnd();
  return [line(cols.map((c) => c.header)), line(widths.map((w) => '-'.repeat(w))), ...cells.map(line)];
}

export function summaryTable(nodes: readonly NodeEntry[], width: number, indent = '  '): string[] {
  let keys = [...ORDER];
  let lines = table(nodes, keys, indent);
  for (const drop of dropOrder(nodes)) {
    if (Math.max(...lines.map((l) => l.length)) <= width) break;
    keys = keys.filter((k) => k !== drop);
    lines = table(nodes, keys, indent);
  }
  return lines;
}
