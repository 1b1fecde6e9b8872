// The "Promotion evidence" section of a proposal PR: each upstream stage's report (linked at the
// commit it was read from), its figures and the soak window. Pure.
import { markdownCell as cell, markdownCode, markdownLink } from '../../core/markdown.js';
import { humanDuration } from '../../core/report/markdown.js';
import type { VersionVerdict } from '../../core/promotion/decide.js';
import { stageName } from '../../core/promotion/stage.js';
import { iso } from '../../core/time.js';

export function evidenceSection(
  v: VersionVerdict,
  soak: string,
  commit: string,
  blobUrlBase: string | undefined,
): string[] {
  const link = (file: string): string =>
    `${blobUrlBase === undefined ? markdownCode(file, true) : markdownLink(file, `${blobUrlBase.replace(/\/+$/, '')}/${commit}/${file.split('/').map(encodeURIComponent).join('/')}`)} @ ${commit.slice(0, 12)}`;
  const lines = [
    '### Promotion evidence',
    '',
    `${v.version} completed on every upstream stage with no failed node, and soaked there for ${cell(soak)} with no later rollout failing or moving off it. Each report below is signed by that cluster's controller and was verified by this one.`,
    '',
    '| stage | report | nodes | duration | failures | time cordoned | completed | soak window |',
    '| --- | --- | --- | --- | --- | --- | --- | --- |',
  ];
  for (const s of v.stages) {
    const r = s.evidence;
    if (!r) {
      lines.push(`| ${cell(stageName(s.stage))} | — | — | — | — | — | — | ${cell(s.message)} |`);
      continue;
    }
    const duration =
      r.startTime !== undefined && r.completionTime !== undefined
        ? humanDuration(Math.round((r.completionTime - r.startTime) / 1000))
        : '—';
    const done = r.completionTime === undefined ? '—' : iso(r.completionTime);
    const window =
      r.completionTime === undefined || s.eligibleAt === undefined
        ? '—'
        : `${iso(r.completionTime)} → ${iso(s.eligibleAt)}`;
    lines.push(
      `| ${cell(stageName(s.stage))} | ${link(r.file)} | ${r.nodes.completed}/${r.nodes.total} | ${duration} | ${r.nodes.failed} | ${humanDuration(r.cordonedSeconds)} | ${done} | ${window} |`,
    );
  }
  lines.push(
    '',
    'If a later rollout on an upstream stage fails while this is open, KangalPatch comments here and marks the title blocked; if a stage rolls back, it closes this proposal.',
  );
  return lines;
}
