// The body of an auto-update proposal PR: the release, the step (with a warning when it crosses a
// minor), what merging and closing mean, the rollout as `kangal-patch preview` computes it now
// (same pure core as the scheduler: one source of truth) and the preflight checks that could run.
// Pure: the preview and the preflight results come in as values.
import semver from 'semver';
import type { Proposal } from '../../core/auto-update/decide.js';
import { markdownCell as cell, markdownCode as code, markdownLink } from '../../core/markdown.js';
import { formatDuration, roundsText, type PreviewReport } from '../../preview/format.js';

export interface ProposalBodyInput {
  cluster: string;
  template: string;
  /** The template's file in the repository. */
  templateFile: string;
  /** The file the PR adds. */
  childFile: string;
  childName: string;
  currentVersion: string;
  proposal: Proposal;
  /** The rollout and preflight of the child plan on the cluster as it is now. */
  report: PreviewReport;
  /** The proposal this one replaces. */
  supersedes?: { version: string; number: number } | undefined;
  /** The promotion evidence section (autoUpdate.promotion), Markdown lines. */
  evidence?: string[] | undefined;
}

const minorOf = (v: string): string => `v${semver.major(v)}.${semver.minor(v)}`;

function stepSection(i: ProposalBodyInput): string[] {
  const { proposal: p, currentVersion: from } = i;
  if (p.step === 'patch') return [`**Step:** patch release, ${from} → ${p.version} (same minor ${minorOf(from)}).`];
  return [
    `**Step:** minor upgrade, ${from} → ${p.version}.`,
    '',
    `> [!WARNING]`,
    `> This crosses a minor version (${minorOf(from)} → ${minorOf(p.version)}). Read the upgrade notes of ${minorOf(p.version)} in the release notes before merging: minor releases can change defaults, deprecate machine-config fields and move the supported Kubernetes range.`,
    `> Upgrades are staged: KangalPatch never skips a minor. A later minor comes as its own proposal once this child plan has completed; Kubernetes is not changed by this plan.`,
  ];
}

function rolloutSection(r: PreviewReport): string[] {
  const p = r.preview;
  const active = p.groups.filter((g) => g.nodes.length > 0);
  const lines = [
    '### Rollout',
    '',
    `Computed now by the same core as \`kangal-patch preview\` (${p.at}): ${p.totals.toPatch} node(s) in ${active.length} group(s), ${p.estimate.rounds} round(s); ${p.totals.skipped} node(s) skipped.`,
    '',
    '| # | group | concurrency | rounds | nodes in order |',
    '| --- | --- | --- | --- | --- |',
    ...p.groups.map(
      (g, n) =>
        `| ${n + 1} | ${cell(g.name)} | ${g.concurrency} | ${g.rounds} | ${g.nodes.length === 0 ? '—' : cell(g.nodes.map((x) => x.name).join(', '))} |`,
    ),
  ];
  const nodes = p.groups.flatMap((g) => g.nodes.map((n) => ({ g: g.name, n })));
  if (nodes.length > 0) {
    lines.push('', '| group | round | node | Talos | installer image |', '| --- | --- | --- | --- | --- |');
    for (const { g, n } of nodes) {
      const role = n.controlPlane ? ' (control plane)' : n.ownNode ? ' (runs KangalPatch: last)' : '';
      lines.push(
        `| ${cell(g)} | ${n.round} | ${cell(n.name)}${role} | ${cell(n.currentTalosVersion ?? 'unknown')} → ${cell(n.talosVersion ?? 'unchanged')} | ${n.installerImage === undefined ? '—' : code(n.installerImage, true)} |`,
      );
    }
  }
  if (p.skipped.length > 0) {
    lines.push('', 'Skipped nodes:');
    for (const s of p.skipped)
      lines.push(
        `- ${code(s.name)}: ${cell(s.reason)}${s.group === undefined ? '' : ` (group ${cell(s.group)})`}: ${cell(s.message)}`,
      );
  }
  const w = p.window;
  lines.push('', `**Maintenance window:** ${w.open ? 'open now' : 'closed now'}: ${cell(w.reason)}`);
  const e = p.estimate;
  lines.push(
    `**Estimated duration:** ${formatDuration(e.typicalMs)} typical (${roundsText(e)}), at most ${formatDuration(e.worstCaseMs)} before timeouts fail nodes; waiting for windows not included.`,
  );
  return lines;
}

function preflightSection(r: PreviewReport): string[] {
  const { checks, skipped } = r.preflight;
  const failed = checks.filter((c) => !c.passed).length;
  return [
    '### Preflight (the checks that can run now)',
    '',
    failed === 0
      ? `All ${checks.length} check(s) passed.`
      : `**${failed} of ${checks.length} check(s) failed**: the child plan would stop in preflight until they pass.`,
    '',
    ...checks.map((c) => `- ${c.passed ? '✅' : '❌'} **${cell(c.name)}**: ${cell(c.message)}`),
    ...skipped.map((s) => `- ⏭️ **${cell(s.name)}**: ${cell(s.message)}`),
  ];
}

export function proposalBody(i: ProposalBodyInput): string {
  const { proposal: p } = i;
  const published =
    p.release.publishedAt === undefined ? '' : `, published ${new Date(p.release.publishedAt).toISOString()}`;
  return [
    `KangalPatch proposes Talos **${p.version}** for the nodes of auto-update template ${code(i.template)} (${code(i.templateFile)}) on cluster ${code(i.cluster)}; their lowest version now is ${cell(i.currentVersion)}.`,
    '',
    `**Release:** ${markdownLink(`Talos ${p.version}`, p.release.htmlUrl)}${published}: read the release notes there.`,
    ...(i.supersedes
      ? ['', `This replaces #${i.supersedes.number} (${i.supersedes.version}), which KangalPatch closed.`]
      : []),
    '',
    ...stepSection(i),
    '',
    `**Merge** to add ${code(i.childFile)}: the template with \`autoUpdate\` removed and \`talosVersion: "${p.version}"\`. KangalPatch applies it as PatchPlan ${code(i.childName)} and rolls it out as below; no new proposal for ${code(i.template)} is made until it has completed.`,
    `**Close without merging** to skip ${p.version}: it is not proposed again.`,
    '',
    ...(i.evidence ? [...i.evidence, ''] : []),
    ...rolloutSection(i.report),
    '',
    ...preflightSection(i.report),
    '',
  ].join('\n');
}
