// What the demo prints, as pure functions of the watched state and the time: the live screen
// (plan, a progress bar per group, a line per active node), the plain log lines for a non-TTY,
// and the closing summary table.
import type { GroupProgress, JobSnapshot, PlanSnapshot } from './watch.js';

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
    ...(a.pendingVersion ? [`${a.pendingVersion} too young`] : []),
    ...(a.lastProposedVersion ? [`proposed ${a.lastProposedVersion}${a.lastProposalURL ? ` (${a.lastProposalURL})` : ''}`] : []),
    ...(a.blockedBy ? [`waiting for ${a.blockedBy}`] : []),
    ...(a.lastError ? [`last error ${a.lastError}`] : []),
  ];
  return `${parts.join('; ')}; checked ${a.lastCheckTime}${a.nextCheckTime ? `, next ${a.nextCheckTime}` : ''}`;
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
  return [
    planLine(p),
    ...(autoUpdate ? [autoUpdate] : []),
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

export interface NodeVersions {
  talos: string;
  kubernetes: string;
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
