// The text and wide views: per plan a header, one sentence of what it waits for, a bar per group,
// a line per active node, failed, held and skipped nodes, and the summary table once it finished;
// a template's releases and children. Every line fits `width`. Pure.
import type { AutoUpdateEntry, NodeEntry, PlanEntry, StatusDocument } from './document.js';
import { groupLines } from './bars.js';
import { fitWidth, wrapParts } from './fit.js';
import { at, change, nodeWaitParts, planSentence, reasonText, type TextOptions } from './sentences.js';
import { summaryTable } from './summary-table.js';
import { duration } from './time-text.js';

/** `done/total nodes (failed, held, skipped)`; nothing for a template, or before the controller has counted (0/0 would say nothing true). */
function nodeCount(p: PlanEntry): string {
  const c = p.counts;
  if (p.template || (c.total === 0 && p.nodes.length === 0)) return '';
  const extra = [
    c.failed && `${c.failed} failed`,
    c.held && `${c.held} held`,
    c.skipped && `${c.skipped} skipped`,
  ].filter(Boolean);
  return `${c.completed}/${c.total} nodes${extra.length ? ` (${extra.join(', ')})` : ''}`;
}

/** `PatchPlan name  phase  done/total nodes (failed, held)  target` (wide: time taken, the proposing template); wrapped where it does not fit. */
function header(p: PlanEntry, o: TextOptions): string[] {
  const target = p.template
    ? 'auto-update template'
    : [
        p.target.talosVersion && `Talos ${p.target.talosVersion}`,
        p.target.kubernetesVersion && `Kubernetes ${p.target.kubernetesVersion}`,
      ]
        .filter(Boolean)
        .join(', ');
  const took =
    o.wide && p.secondsTotal !== undefined
      ? `${p.finished ? 'took' : 'running for'} ${duration(p.secondsTotal * 1000)}`
      : '';
  const from = o.wide && p.proposedBy ? `proposed by ${p.proposedBy}` : '';
  return wrapParts('', [`PatchPlan ${p.name}`, p.phase, nodeCount(p), target, took, from], {
    sep: '  ',
    width: o.width,
    indent: '    ',
  });
}

/** Rows of cells padded to columns; the last cell of each row is left as it is (`trim`: nor the spaces before it). */
function columns(rows: readonly string[][], trim = true): string[] {
  const widths = (rows[0] ?? []).map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  const padded = rows.map((r) => r.map((x, i) => (i === r.length - 1 ? x : x.padEnd(widths[i] ?? 0))).join('  '));
  return trim ? padded.map((l) => l.trimEnd()) : padded;
}

/** A line per node whose job has not finished: phase, time in phase, what it waits for (wide: group, versions, total); the wait wraps by clause. */
function activeLines(nodes: readonly NodeEntry[], o: TextOptions): string[] {
  const active = nodes.filter((n) => !n.finished);
  if (active.length === 0) return [];
  const secs = (s: number | undefined): string => (s === undefined ? '-' : duration(s * 1000));
  const rows = active.map((n) =>
    o.wide
      ? [
          n.node,
          n.group,
          n.phase,
          secs(n.secondsInPhase),
          secs(n.secondsTotal),
          change(n.talos, 'target'),
          change(n.kubernetes, 'target'),
          '',
        ]
      : [n.node, n.phase, secs(n.secondsInPhase), ''],
  );
  const lines = columns(rows, false).map((cells, i) =>
    wrapParts(`    ${cells}`, nodeWaitParts(active[i] as NodeEntry, o), {
      sep: '; ',
      width: o.width,
      indent: '      ',
    }),
  );
  return ['  active:', ...lines.flat().map((l) => l.trimEnd())];
}

function failedLines(nodes: readonly NodeEntry[]): string[] {
  const failed = nodes.filter((n) => n.phase === 'Failed');
  if (failed.length === 0) return [];
  return [
    '  failed:',
    ...columns(failed.map((n) => [n.node, reasonText(n.wait) || 'no reason recorded'])).map((l) => `    ${l}`),
  ];
}

function holdLines(p: PlanEntry): string[] {
  const named = [
    ...p.held.map((h) => [h.node, `held: ${h.reason || 'no reason given'}`]),
    ...p.skipped.map((h) => [h.node, `skipped: ${h.reason || 'no reason given'}`]),
  ];
  const more = Math.max(0, p.counts.held - p.held.length) + Math.max(0, p.counts.skipped - p.skipped.length);
  if (named.length === 0 && more === 0) return [];
  return [
    '  holds (kangalpatch.ozalp.dk/hold):',
    ...columns(named).map((l) => `    ${l}`),
    ...(more > 0 ? [`    … and ${more} more`] : []),
  ];
}

function pendingText(a: AutoUpdateEntry, o: TextOptions): string {
  if (!a.pendingVersion) return '';
  const held = a.pendingHeldBy === 'Promotion' ? 'soaking upstream' : 'too young';
  return `pending ${a.pendingVersion} (${held}${a.pendingEligibleTime ? ` until ${at(a.pendingEligibleTime, o)}` : ''})`;
}

function promotionLine(a: AutoUpdateEntry, o: TextOptions): string[] {
  const p = a.promotion;
  if (!p) return [];
  const stages = p.stages.map(
    (s) => `${s.cluster} ${s.state}${s.eligibleTime && s.state === 'Soaking' ? ` until ${at(s.eligibleTime, o)}` : ''}`,
  );
  return [
    `  promotion: ${p.reason}${p.version ? ` ${p.version}` : ''}${stages.length ? `: ${stages.join(', ')}` : ''}`,
  ];
}

function childLines(a: AutoUpdateEntry): string[] {
  if (a.children.length === 0) return [];
  const rows = a.children.map((c) => [
    c.name,
    c.phase,
    c.talosVersion ? `Talos ${c.talosVersion}` : '',
    `${c.completed}/${c.total} nodes${c.failed ? `, ${c.failed} failed` : ''}`,
  ]);
  return ['  children:', ...columns(rows).map((l) => `    ${l}`)];
}

function checkLine(a: AutoUpdateEntry, o: TextOptions): string {
  if (!a.lastCheckTime) return '  releases: no check yet';
  const next = a.nextCheckTime ? `; next check ${at(a.nextCheckTime, o)}` : '';
  return `  releases: nodes on ${a.currentVersion ?? '?'}, newest ${a.latestVersion ?? '?'}; checked ${at(a.lastCheckTime, o)}${next}`;
}

function autoUpdateLines(a: AutoUpdateEntry, o: TextOptions): string[] {
  const proposed =
    a.lastProposedVersion && `  proposed ${a.lastProposedVersion}${a.lastProposalURL ? `: ${a.lastProposalURL}` : ''}`;
  const blocked =
    a.blockedBy &&
    `  blocked until ${a.blockedBy.name} (${a.blockedBy.version}, ${a.blockedBy.phase ?? 'Pending'}) completes`;
  const optional = [
    pendingText(a, o) && `  ${pendingText(a, o)}`,
    proposed,
    blocked,
    a.lastError && `  last error: ${a.lastError}`,
  ];
  return [
    checkLine(a, o),
    ...optional.filter((l): l is string => typeof l === 'string' && l !== ''),
    ...promotionLine(a, o),
    ...childLines(a),
  ];
}

/** The block of one plan, lines not yet cut to the width. */
function planBlock(p: PlanEntry, o: TextOptions): string[] {
  return [
    ...header(p, o),
    ...wrapParts('  ', planSentence(p, o), { sep: '; ', width: o.width, indent: '    ' }),
    ...(p.specUnreadable ? ['  (its spec does not parse: shown from its status)'] : []),
    ...(p.autoUpdate ? autoUpdateLines(p.autoUpdate, o) : []),
    ...groupLines(p.groups, o),
    ...activeLines(p.nodes, o),
    ...failedLines(p.nodes),
    ...holdLines(p),
    ...(p.finished && p.nodes.length > 0 ? summaryTable(p.nodes, o.width) : []),
    ...(p.reportUrl ? [`  report: ${p.reportUrl}`] : []),
  ];
}

/** Every plan's block, a blank line between, each line cut to the width. */
export function renderText(doc: StatusDocument, o: TextOptions): string[] {
  if (doc.plans.length === 0) return ['No PatchPlans.'];
  const blocks = doc.plans.map((p) => planBlock(p, o));
  const lines = blocks.flatMap((b, i) => (i === 0 ? b : ['', ...b]));
  const note = doc.nodesReadable
    ? []
    : ['', '(Nodes are not readable with these credentials: readiness and versions come from the PatchJobs.)'];
  return fitWidth([...lines, ...note], o.width);
}
