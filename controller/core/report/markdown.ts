// The human report: a summary table, then one table per group in rollout order. Rendered only
// from the report document (status times, never the wall clock), so equal status → equal bytes.
import { markdownCell, markdownCode, markdownLink } from '../markdown.js';
import type { GroupReport, NodeReport, ReportDocument } from './document.js';

const DASH = '—';

/** A table cell: literal text on one line (plan text and messages are untrusted: core/markdown.ts). */
export function cell(text: string | number | null): string {
  if (text === null || text === '') return DASH;
  return markdownCell(String(text));
}

/** 0 → `0s`, 65 → `1m 5s`, 3700 → `1h 1m 40s`. */
export function humanDuration(seconds: number | null): string {
  if (seconds === null) return DASH;
  const h = Math.floor(seconds / 3600);
  const m = Math.floor((seconds % 3600) / 60);
  const s = seconds % 60;
  return [h ? `${h}h` : '', m ? `${m}m` : '', s || (!h && !m) ? `${s}s` : ''].filter(Boolean).join(' ');
}

const arrow = (v: { from: string | null; to: string | null }): string =>
  v.from === null && v.to === null ? DASH : v.from === v.to ? cell(v.to) : `${cell(v.from)} → ${cell(v.to)}`;

function cordoned(x: NodeReport): string {
  if (x.cordonedSeconds !== null) return humanDuration(x.cordonedSeconds);
  return x.cordonedTime === null ? DASH : `since ${x.cordonedTime}`;
}

/** The etcd gate of a control-plane node: how long it waited for etcd, and whether its member handed leadership over first. */
function etcd(x: NodeReport): string {
  if (x.etcd === undefined) return DASH;
  const waited = x.etcd.waitedSeconds > 0 ? `waited ${humanDuration(x.etcd.waitedSeconds)}` : 'no wait';
  return x.etcd.handedOverLeadership ? `${waited}; leader, handed over first` : waited;
}

function nodeRow(x: NodeReport, withEtcd: boolean): string {
  return `| ${cell(x.name)} | ${arrow(x.talos)} | ${arrow(x.kubernetes)} | ${cell(x.phase)} | ${cell(x.startTime)} | ${humanDuration(x.durationSeconds)} | ${cordoned(x)} |${withEtcd ? ` ${etcd(x)} |` : ''} ${cell(x.failure)} |`;
}

function groupSection(g: GroupReport, index: number): string[] {
  const counts =
    g.total === null
      ? ''
      : `: ${g.completed ?? 0}/${g.total} completed, ${g.running ?? 0} running, ${g.failed ?? 0} failed, ${g.pending ?? 0} pending`;
  const head = `### ${index + 1}. ${markdownCell(g.name)}${g.concurrency === null ? '' : ` (concurrency ${g.concurrency})`}${counts}`;
  if (g.nodes.length === 0) return [head, '', 'No node scheduled yet.', ''];
  // The etcd column only in a group with control-plane nodes the etcd gate held or let go.
  const withEtcd = g.nodes.some((x) => x.etcd !== undefined);
  return [
    head,
    '',
    `| Node | Talos | Kubernetes | Phase | Started | Duration | Cordoned |${withEtcd ? ' etcd |' : ''} Failure |`,
    `| --- | --- | --- | --- | --- | --- | --- |${withEtcd ? ' --- |' : ''} --- |`,
    ...g.nodes.map((x) => nodeRow(x, withEtcd)),
    '',
  ];
}

function holdCounts(d: ReportDocument): string {
  return `${d.nodes.held > 0 ? `, ${d.nodes.held} held` : ''}${d.nodes.skipped > 0 ? `, ${d.nodes.skipped} skipped` : ''}`;
}

/** Held and skipped nodes (the hold annotation), with the reasons people gave; nothing when there are none. */
function holdsSection(d: ReportDocument): string[] {
  const rows = [
    ...d.holds.held.map((h) => ({ ...h, state: 'held (waited for)' })),
    ...d.holds.skipped.map((h) => ({ ...h, state: 'skipped (not patched)' })),
  ];
  if (rows.length === 0) return [];
  return [
    '## Held and skipped nodes',
    '',
    '| Node | State | Reason |',
    '| --- | --- | --- |',
    ...rows.map((r) => `| ${markdownCell(r.node)} | ${r.state} | ${cell(r.reason || null)} |`),
    '',
  ];
}

/** A stepwise plan's hops, in order, with their state and times; nothing for other plans. */
function pathSection(d: ReportDocument): string[] {
  if (d.path === undefined) return [];
  const rows = d.path.map(
    (h) =>
      `| ${h.number} | ${h.kind === 'talos' ? 'Talos' : 'Kubernetes'} ${cell(h.version)} | ${cell(h.state)} | ${cell(h.startTime)} | ${cell(h.completionTime)} | ${cell(h.reason)} |`,
  );
  return [
    '## Path',
    '',
    'Each hop is a rollout of the nodes behind it; the groups below list a row per node and hop (its PatchJob `<plan>-h<hop>-<node>`).',
    '',
    '| Hop | To | State | Started | Finished | Why |',
    '| --- | --- | --- | --- | --- | --- |',
    ...rows,
    '',
  ];
}

function preflight(d: ReportDocument): string {
  const p = d.preflight;
  if (p.status === null) return 'not run yet';
  const verdict = p.status === 'True' ? 'passed' : p.status === 'False' ? 'failed' : 'unknown';
  return `${verdict}${p.message ? `: ${cell(p.message)}` : ''}`;
}

function source(d: ReportDocument): string {
  const s = d.source;
  if (s.path === null && s.commit === null) return 'applied without Git';
  const label = `${s.path ?? DASH} @ ${s.commit === null ? DASH : s.commit.slice(0, 12)}`;
  return s.url === null ? markdownCode(label, true) : markdownLink(label, s.url);
}

export function renderMarkdown(d: ReportDocument): string {
  const t = d.target;
  const target = [
    t.talosVersion === null ? '' : `Talos ${t.talosVersion}`,
    t.kubernetesVersion === null ? '' : `Kubernetes ${t.kubernetesVersion}`,
  ]
    .filter(Boolean)
    .join(', ');
  const c = d.nodes;
  const lines = [
    `# Rollout report: ${markdownCell(d.plan.name)} on ${markdownCell(d.cluster)}`,
    '',
    '<!-- Written by KangalPatch from the PatchPlan status; the YAML twin beside this file is the machine-readable copy. -->',
    '',
    '| | |',
    '| --- | --- |',
    `| Phase | **${cell(d.phase)}**${d.reason === null ? '' : ` (${cell(d.reason)})`} |`,
    `| Target | ${target || DASH} |`,
    `| Nodes | ${c.total === null ? DASH : `${c.total} total: ${c.completed ?? 0} completed, ${c.running ?? 0} running, ${c.failed ?? 0} failed, ${c.pending ?? 0} pending${holdCounts(d)}`} |`,
    `| Started | ${cell(d.startTime)} |`,
    `| Finished | ${cell(d.completionTime)} |`,
    `| Preflight | ${preflight(d)} |`,
    `| Plan file | ${source(d)} |`,
    `| Message | ${cell(d.message)} |`,
    '',
    ...pathSection(d),
    '## Groups',
    '',
  ];
  if (d.groups.length === 0) lines.push('No group has nodes yet.', '');
  d.groups.forEach((g, i) => lines.push(...groupSection(g, i)));
  lines.push(...holdsSection(d));
  return `${lines.join('\n').trimEnd()}\n`;
}
