// What the demo prints, as pure functions of the watched state and the time: the live screen
// (plan, a progress bar per group, a line per active node), the plain log lines for a non-TTY,
// and the closing summary table.
import type { GroupProgress, JobSnapshot, NodeVersions, PlanSnapshot } from './watch.js';

const FINISHED = new Set(['Completed', 'Failed']);

export function duration(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0) return '-';
  const s = Math.round(ms / 1000);
  return s < 60 ? `${s}s` : `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
}

const since = (iso: string | undefined, nowMs: number): number => (iso ? nowMs - Date.parse(iso) : NaN);
const between = (from: string | undefined, to: string | undefined): number => (from && to ? Date.parse(to) - Date.parse(from) : NaN);

export function planLine(p: PlanSnapshot | undefined): string {
  if (!p) return 'plan: waiting for the controller to apply it from Git';
  const counts = p.totalNodes === undefined ? '' : ` ${p.completedNodes ?? 0}/${p.totalNodes} nodes` + (p.failedNodes ? `, ${p.failedNodes} failed` : '');
  const why = p.reason || p.message ? ` — ${[p.reason, p.message].filter(Boolean).join(': ')}` : '';
  const next = p.nextScheduleTime ? ` (next schedule ${p.nextScheduleTime})` : '';
  return `plan ${p.name}: ${p.phase ?? 'Pending'}${p.paused ? ' (paused)' : ''}${counts}${why}${next}`;
}

/** A template's last release check: the versions it saw, its proposal, when it looks again. */
export function autoUpdateLine(p: PlanSnapshot): string | undefined {
  const a = p.autoUpdate;
  if (!a) return undefined;
  if (!a.lastCheckTime) return '  auto-update: no release check yet';
  const parts = [
    `  auto-update: nodes on ${a.currentVersion ?? '?'}, newest release ${a.latestVersion ?? '?'}`,
    ...(a.pendingVersion ? [`${a.pendingVersion} ${a.pendingHeldBy === 'Promotion' ? 'soaking upstream' : 'too young'}`] : []),
    ...(a.lastProposedVersion ? [`proposed ${a.lastProposedVersion}${a.lastProposalURL ? ` (${a.lastProposalURL})` : ''}`] : []),
    ...(a.blockedBy ? [`waiting for ${a.blockedBy}`] : []),
    ...(a.lastError ? [`last error ${a.lastError}`] : []),
  ];
  return `${parts.join('; ')}; checked ${a.lastCheckTime}${a.nextCheckTime ? `, next ${a.nextCheckTime}` : ''}`;
}

/** An auto-update template's promotion: the version it waits for (or promoted) and each upstream stage's state. */
export function promotionLine(p: PlanSnapshot): string | undefined {
  const pr = p.autoUpdate?.promotion;
  if (!pr) return undefined;
  const stages = pr.stages.map((s) => `${s.cluster} ${s.state ?? '?'}${s.state === 'Soaking' && s.eligibleTime ? ` until ${s.eligibleTime}` : ''}`);
  return `  promotion: ${pr.reason ?? '?'}${pr.version ? ` ${pr.version}` : ''}${stages.length ? ` (${stages.join(', ')})` : ''}`;
}

/** The soak countdown: how long until `eligibleTime` (ISO), in whole seconds. */
export function soakLine(cluster: string, version: string, upstream: string, eligibleTime: string, nowMs: number): string {
  const left = Math.max(0, Math.ceil((Date.parse(eligibleTime) - nowMs) / 1000));
  return `soak: ${version} runs on ${upstream}; ${cluster} may take it at ${eligibleTime}: ${left > 0 ? `${left} s left` : 'now'}`;
}

/** Two columns of `width` characters in all: each line cut or padded to its half, a bar between. */
export function sideBySide(left: readonly string[], right: readonly string[], width: number): string[] {
  const half = Math.max(20, Math.floor((width - 3) / 2));
  const fit = (l: string): string => (l.length > half ? `${l.slice(0, half - 1)}…` : l.padEnd(half));
  return Array.from({ length: Math.max(left.length, right.length) }, (_, i) => `${fit(left[i] ?? '')} │ ${fit(right[i] ?? '')}`.trimEnd());
}

/**
 * The "Promotion evidence" table of a proposal's body, for a terminal: per upstream stage, its
 * figures as `name: value` (a Markdown link printed as its URL), then the sentence above the table.
 */
export function evidenceLines(body: string): string[] {
  const lines = body.split('\n');
  const start = lines.findIndex((l) => l.trim() === '### Promotion evidence');
  if (start < 0) return ['(the proposal has no Promotion evidence section)'];
  const cells = (row: string): string[] => row.trim().replace(/^\|/, '').replace(/\|$/, '').split(/(?<!\\)\|/).map((c) => c.trim().replace(/\\\|/g, '|'));
  const section = lines.slice(start + 1);
  const headerAt = section.findIndex((l) => l.startsWith('| '));
  const header = headerAt < 0 ? [] : cells(section[headerAt] ?? '');
  const rows = headerAt < 0 ? [] : section.slice(headerAt + 2).filter((l, i, all) => l.startsWith('| ') && all.slice(0, i).every((x) => x.startsWith('| ')));
  const unlink = (c: string): string => c.replace(/\[([^\]]+)\]\(([^)]+)\)/g, '$2');
  const summary = section.slice(0, Math.max(0, headerAt)).map((l) => l.trim()).filter(Boolean);
  return [
    ...summary,
    ...rows.flatMap((row) => {
      const values = cells(row);
      return [`${header[0] ?? 'stage'} ${values[0] ?? '?'}:`, ...header.slice(1).map((h, i) => `  ${h}: ${unlink(values[i + 1] ?? '')}`)];
    }),
  ];
}

export function bar(done: number, failed: number, total: number, width = 20): string {
  if (total <= 0) return `[${' '.repeat(width)}]`;
  const d = Math.round((done / total) * width);
  const f = Math.min(width - d, Math.round((failed / total) * width));
  return `[${'#'.repeat(d)}${'x'.repeat(f)}${'.'.repeat(width - d - f)}]`;
}

export function groupLine(g: GroupProgress, nameWidth = 12): string {
  return `  ${g.name.padEnd(nameWidth)} ${bar(g.completed, g.failed, g.total)} ${g.completed}/${g.total}  running ${g.running}  failed ${g.failed}`;
}

export function nodeLine(j: JobSnapshot, nowMs: number): string {
  const why = j.reason ? `  ${j.reason}` : '';
  return `    ${j.node.padEnd(10)} ${j.group.padEnd(12)} ${(j.phase ?? 'Pending').padEnd(20)} ${duration(since(j.phaseStartTime ?? j.startTime, nowMs)).padStart(6)} in phase, ${duration(since(j.startTime, nowMs))} in all${why}`;
}

/** The live screen: the plan, each group, each node whose job has not finished. */
export function liveScreen(p: PlanSnapshot | undefined, jobs: readonly JobSnapshot[], nowMs: number): string[] {
  const width = Math.max(12, ...(p?.groups ?? []).map((g) => g.name.length));
  const active = jobs.filter((j) => !FINISHED.has(j.phase ?? ''));
  const failed = jobs.filter((j) => j.phase === 'Failed');
  const autoUpdate = p && autoUpdateLine(p);
  const promotion = p && promotionLine(p);
  return [
    planLine(p),
    ...(autoUpdate ? [autoUpdate] : []),
    ...(promotion ? [promotion] : []),
    ...(p?.groups ?? []).map((g) => groupLine(g, width)),
    ...(active.length ? ['  active nodes:', ...active.map((j) => nodeLine(j, nowMs))] : []),
    ...failed.map((j) => `    ${j.node} failed: ${j.reason ?? ''} ${j.message ?? ''}`.trimEnd()),
  ];
}

/** A line for the plain (non-TTY) log, printed when its signature changes (not on every new message). */
export interface Fact {
  signature: string;
  text: string;
}

/** Keyed facts: the plan (phase, reason, counts), each group's counts, each node's phase and reason. */
export function facts(p: PlanSnapshot | undefined, jobs: readonly JobSnapshot[]): Map<string, Fact> {
  const plan = planLine(p);
  const out = new Map<string, Fact>([['plan', { signature: p ? `${p.phase}|${p.reason}|${p.paused}|${p.completedNodes}|${p.failedNodes}` : '', text: plan }]]);
  const autoUpdate = p && autoUpdateLine(p);
  if (autoUpdate) out.set('auto-update', { signature: autoUpdate, text: autoUpdate.trimStart() });
  const promotion = p && promotionLine(p);
  if (promotion) out.set('promotion', { signature: promotion, text: promotion.trimStart() });
  for (const g of p?.groups ?? []) {
    const text = `group ${g.name}: ${g.completed}/${g.total} completed, ${g.running} running, ${g.failed} failed`;
    out.set(`group ${g.name}`, { signature: text, text });
  }
  for (const j of jobs) {
    const text = `node ${j.node} (${j.group}): ${j.phase ?? 'Pending'}${j.reason ? ` — ${j.reason}${j.message ? `: ${j.message}` : ''}` : ''}`;
    out.set(`node ${j.node}`, { signature: `${j.phase}|${j.reason}`, text });
  }
  return out;
}

/** The texts of the facts whose signature changed since `before` (which is updated). */
export function changedFacts(before: Map<string, string>, now: Map<string, Fact>): string[] {
  const lines: string[] = [];
  for (const [k, f] of now) {
    if (before.get(k) === f.signature) continue;
    before.set(k, f.signature);
    lines.push(f.text);
  }
  return lines;
}

export interface SummaryRow {
  node: string;
  group: string;
  before: NodeVersions | undefined;
  after: NodeVersions | undefined;
  job: JobSnapshot;
}

/** The closing table: per node, versions before → after, time cordoned, total time, result. */
export function summaryTable(rows: readonly SummaryRow[]): string[] {
  const change = (a: string | undefined, b: string | undefined): string => (a === b ? `${a ?? '?'} (unchanged)` : `${a ?? '?'} → ${b ?? '?'}`);
  const cells = rows.map((r) => [
    r.node,
    r.group,
    change(r.before?.talos, r.after?.talos),
    change(r.before?.kubernetes, r.after?.kubernetes),
    r.job.cordonedTime ? duration(between(r.job.cordonedTime, r.job.uncordonedTime ?? r.job.completionTime)) : 'never',
    duration(between(r.job.startTime, r.job.completionTime)),
    r.job.phase ?? '?',
  ]);
  const header = ['node', 'group', 'Talos', 'Kubernetes', 'cordoned', 'total', 'result'];
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((c) => (c[i] ?? '').length)));
  const line = (c: string[]): string => c.map((x, i) => x.padEnd(widths[i] ?? 0)).join('  ').trimEnd();
  return [line(header), line(widths.map((w) => '-'.repeat(w))), ...cells.map(line)];
}
