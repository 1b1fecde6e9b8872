// `kangal-patch preview` output: the text a person reads and the JSON document scripts read
// (shape documented in docs/gitops.md, "Previewing a rollout").
import type { PreflightCheck } from '../core/plan/types.js';
import type { RolloutPreview } from '../core/preview.js';
import type { PreviewPreflight } from './preflight.js';

export interface PreviewReport {
  plan: { name: string; file: string };
  preview: RolloutPreview;
  preflight: PreviewPreflight;
}

/** "1h 5m", "4m 30s", "0s". */
/** How the typical estimate is made up: rounds × per-node time, the pre-pulled rounds apart. */
export function roundsText(e: RolloutPreview['estimate']): string {
  const perRound = (ms: number): string =>
    `max(${formatDuration(ms)} per node, delayBetweenNodes ${formatDuration(e.delayBetweenNodesMs)})`;
  const full = e.rounds - e.prePulledRounds;
  if (e.prePulledRounds === 0) return `${e.rounds} round(s) × ${perRound(e.perNodeTypicalMs)}`;
  return `${full} round(s) × ${perRound(e.perNodeTypicalMs)} + ${e.prePulledRounds} with the installer pre-pulled × ${perRound(e.perNodeTypicalMs - e.pullTypicalMs)}`;
}

export function formatDuration(ms: number): string {
  const s = Math.round(ms / 1000);
  const parts: [number, string][] = [
    [Math.floor(s / 3600), 'h'],
    [Math.floor((s % 3600) / 60), 'm'],
    [s % 60, 's'],
  ];
  const shown = parts.filter(([n]) => n > 0).map(([n, u]) => `${n}${u}`);
  return shown.length === 0 ? '0s' : shown.join(' ');
}

const checkLine = (c: PreflightCheck): string => `  ${c.passed ? 'ok  ' : 'FAIL'}  ${c.name}: ${c.message}`;

/** A node's hold, installer override and schematic change, as the preview line ends. */
function controls(n: PreviewReport['preview']['groups'][number]['nodes'][number]): string {
  const parts: string[] = [];
  if (n.hold)
    parts.push(
      n.hold.kind === 'skip'
        ? `SKIPPED by its hold annotation${n.hold.reason ? ` (${n.hold.reason})` : ''}`
        : `HELD by its hold annotation${n.hold.reason ? ` (${n.hold.reason})` : ''}: its group waits for it`,
    );
  if (n.installerOverride)
    parts.push(
      `installer overridden by annotation (${Object.entries(n.installerOverride)
        .map(([k, v]) => `${k}=${v}`)
        .join(', ')})`,
    );
  if (n.schematicChange)
    parts.push(`schematic ${short(n.schematicChange.from)} → ${short(n.schematicChange.to)}: its extensions change`);
  return parts.length === 0 ? '' : `; ${parts.join('; ')}`;
}

const short = (schematic: string | undefined): string =>
  schematic === undefined ? 'none' : `${schematic.slice(0, 12)}…`;

/** A stepwise plan's path, hop by hop with the reason for each (none for other plans, or when no path was found). */
function pathLines(checks: readonly PreflightCheck[]): string[] {
  const hops = checks.find((c) => c.path !== undefined)?.path;
  if (hops === undefined) return [];
  if (hops.length === 0) return ['path: no hop (every node runs the target)'];
  return [
    `path: ${hops.length} hop(s), each a rollout of the nodes behind it as above (the estimate is for one), the next only once every node finished the one before:`,
    ...hops.map((h, i) => `  ${i + 1}. ${h.kind === 'talos' ? 'Talos' : 'Kubernetes'} ${h.to}: ${h.reason}`),
  ];
}

export function formatPreviewText(r: PreviewReport): string {
  const p = r.preview;
  const target = [
    p.target.talosVersion && `Talos ${p.target.talosVersion}`,
    p.target.kubernetesVersion && `Kubernetes ${p.target.kubernetesVersion}`,
  ]
    .filter((t) => t)
    .join(', ');
  const lines = [
    `PatchPlan ${r.plan.name} (${r.plan.file}), previewed at ${p.at}`,
    `target: ${target}${p.target.path === 'stepwise' ? ' (stepwise: the destination, reached hop by hop)' : ''}`,
  ];
  const active = p.groups.filter((g) => g.nodes.length > 0);
  lines.push(
    `rollout: ${p.totals.toPatch} node(s) in ${active.length} group(s), ${p.estimate.rounds} round(s); ${p.totals.skipped} node(s) skipped`,
  );
  p.groups.forEach((g, i) => {
    lines.push(`  ${i + 1}. ${g.name}: ${g.nodes.length} node(s), concurrency ${g.concurrency}, ${g.rounds} round(s)`);
    for (const n of g.nodes) {
      const talos =
        n.installerImage === undefined
          ? `Talos ${n.currentTalosVersion ?? 'unknown'} (unchanged)`
          : `Talos ${n.currentTalosVersion ?? 'unknown'} → ${n.talosVersion ?? ''}`;
      const kube =
        p.target.kubernetesVersion === undefined
          ? ''
          : `, Kubernetes ${n.currentKubernetesVersion} → ${n.kubernetesVersion ?? ''}`;
      const image = n.installerImage === undefined ? '' : `, installer ${n.installerImage}`;
      lines.push(
        `     round ${n.round}: ${n.name}${n.controlPlane ? ' (control plane)' : ''}${n.ownNode ? ' (runs this controller: last)' : ''}: ${talos}${kube}${image}${controls(n)}`,
      );
    }
  });
  if (p.skipped.length > 0) {
    lines.push('skipped:');
    for (const s of p.skipped)
      lines.push(`  ${s.name}: ${s.reason}${s.group === undefined ? '' : ` (group ${s.group})`}: ${s.message}`);
  }
  lines.push(`maintenance window: ${p.window.open ? 'open' : 'closed'}: ${p.window.reason}`);
  const e = p.estimate;
  lines.push(
    `estimated duration: ${formatDuration(e.typicalMs)} typical (${roundsText(e)}), ` +
      `at most ${formatDuration(e.worstCaseMs)} before timeouts fail nodes (${formatDuration(e.perNodeWorstCaseMs)} per round from the plan's timeouts); windows not included`,
  );
  lines.push(...pathLines(r.preflight.checks));
  lines.push('preflight:');
  for (const c of r.preflight.checks) lines.push(checkLine(c));
  for (const s of r.preflight.skipped) lines.push(`  skip  ${s.name}: ${s.message}`);
  return `${lines.join('\n')}\n`;
}

export function formatPreviewJson(r: PreviewReport): string {
  return `${JSON.stringify(r, null, 2)}\n`;
}
