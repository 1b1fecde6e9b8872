// `kangal-patch preview` on an auto-update template, the imperative shell: the lowest Talos version
// on its selected nodes (live cluster), the upstream releases, and with autoUpdate.promotion the
// upstream reports of the local checkout (status/ beside the plans, verified with the keys of
// --promotion-keys-dir) → what the controller would propose now and why not a newer release.
import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import type { PatchPlanDocument } from '../../schemas/patchplan.js';
import { explainTemplate, type TemplateExplanation } from '../core/auto-update/explain.js';
import { lowestVersion } from '../core/auto-update/releases.js';
import { decidePromotion } from '../core/promotion/decide.js';
import { selectNodes } from '../core/plan/selection.js';
import { stableReleases } from '../core/auto-update/releases.js';
import { allowedStep } from '../core/auto-update/decide.js';
import { createReleasesClient } from '../forge/releases.js';
import { upstreamEvidence } from './promotion/reports.js';
import { loadTrustedKeys } from './promotion/signature.js';
import { readTokenFile } from './source/token.js';
import type { ReportTree } from './source/reports.js';
import { createKube } from '../kube/index.js';
import type { OpContext } from '../runtime/context.js';
import type { PromotionStatus } from '../../schemas/patchplan.js';
import { readCluster } from '../preview/cluster.js';

export interface TemplatePreviewOptions {
  kubeconfig?: string | undefined;
  operatorNamespace: string;
  controllerNode?: string | undefined;
  releasesApiUrl?: string | undefined;
  releasesTokenFile?: string | undefined;
  promotionKeysDir?: string | undefined;
  /** The checkout holding status/ (default: the nearest folder above the template with a .git). */
  repo?: string | undefined;
}

export interface TemplatePreview {
  template: { name: string; file: string };
  explanation: TemplateExplanation;
  promotion: PromotionStatus | undefined;
}

/** The nearest folder above `file` holding .git (a checkout's root), else the current directory. */
function checkoutOf(file: string): string {
  for (let dir = dirname(resolve(file)); ; dir = dirname(dir)) {
    if (existsSync(join(dir, '.git'))) return dir;
    if (dirname(dir) === dir) return process.cwd();
  }
}

/** status/<cluster>/<plan>.{yaml,sig} of a checkout, as the controller reads them from a commit's tree. */
async function readStatusFolder(repo: string): Promise<ReportTree> {
  const tree: ReportTree = { files: new Map(), skipped: [] };
  const root = join(repo, 'status');
  if (!existsSync(root)) return tree;
  for (const cluster of await readdir(root, { withFileTypes: true })) {
    if (!cluster.isDirectory()) continue;
    for (const f of await readdir(join(root, cluster.name), { withFileTypes: true })) {
      if (f.isFile() && /\.(yaml|sig)$/.test(f.name))
        tree.files.set(`status/${cluster.name}/${f.name}`, await readFile(join(root, cluster.name, f.name), 'utf8'));
    }
  }
  return tree;
}

export async function previewTemplate(
  ctx: OpContext,
  loaded: { file: string; plan: PatchPlanDocument },
  opts: TemplatePreviewOptions,
): Promise<TemplatePreview> {
  const { spec, metadata } = loaded.plan;
  const auto = spec.target.autoUpdate;
  if (!auto) throw new Error(`PatchPlan ${metadata.name} has no target.autoUpdate`);
  const kube = createKube({ kubeconfig: opts.kubeconfig, operatorNamespace: opts.operatorNamespace, clock: ctx.clock });
  const cluster = await readCluster(ctx, kube, metadata.name);
  const selected = selectNodes(spec, cluster.nodes, opts.controllerNode);
  const current = lowestVersion(cluster.nodes.filter((n) => selected.groupOf.has(n.name)).map((n) => n.talosVersion));
  const token = await readTokenFile(opts.releasesTokenFile, '--releases-token-file');
  const feed = await createReleasesClient({ baseUrl: opts.releasesApiUrl, token }).list(ctx);
  const now = ctx.clock.now();
  let promotion: PromotionStatus | undefined;
  let verdicts;
  if (auto.promotion) {
    if (opts.promotionKeysDir === undefined)
      throw new Error(
        `${metadata.name} has autoUpdate.promotion: give --promotion-keys-dir (the upstream clusters' public keys, as the controller has them)`,
      );
    const keys = await loadTrustedKeys(opts.promotionKeysDir);
    if (keys.errors.length > 0) throw new Error(`--promotion-keys-dir: ${keys.errors.join('; ')}`);
    const repo = opts.repo ?? checkoutOf(loaded.file);
    const evidence = upstreamEvidence(
      { commit: `working tree ${repo}`, tree: await readStatusFolder(repo) },
      keys.keys,
      new Set(auto.promotion.after.map((s) => s.cluster)),
      cluster.self?.status.autoUpdate?.promotion?.upstreamSequence,
    );
    const versions =
      current === undefined
        ? []
        : stableReleases(feed.releases)
            .map((r) => r.tagName)
            .filter(
              (v) =>
                allowedStep(current, v, { allow: auto.allow, stepwise: spec.target.path === 'stepwise' }) !== undefined,
            );
    const outcome = decidePromotion({
      now,
      spec: auto.promotion,
      versions,
      reports: evidence.reports,
      rejected: evidence.rejected,
      refused: evidence.refused,
      commit: undefined,
    });
    promotion = outcome.status;
    verdicts = outcome.verdicts;
  }
  const explanation = explainTemplate(
    {
      now,
      spec: auto,
      installerSource: spec.target.source,
      stepwise: spec.target.path === 'stepwise',
      currentVersion: current,
      releases: feed.releases,
      skippedVersions: [],
      children: [],
    },
    verdicts,
  );
  return { template: { name: metadata.name, file: loaded.file }, explanation, promotion };
}

export function formatTemplatePreview(p: TemplatePreview): string {
  const e = p.explanation;
  const lines = [
    `auto-update template ${p.template.name} (${p.template.file})`,
    `current Talos (lowest on the selected nodes): ${e.currentVersion ?? 'unknown'}`,
    `would propose now: ${e.proposal ?? 'nothing'} — ${e.summary}`,
    '(skipped versions, open proposals and child plans live on the forge and in the cluster: not considered here)',
    '',
    'newer releases:',
    ...(e.versions.length === 0
      ? ['  none']
      : e.versions.map((v) => `  ${v.version.padEnd(10)} ${v.state.padEnd(18)} ${v.message}`)),
  ];
  const pr = p.promotion;
  if (pr) lines.push(...promotionLines(pr));
  return `${lines.join('\n')}\n`;
}

/** The promotion verdict, after a blank line: each stage, and the upstream reports rejected. */
function promotionLines(pr: PromotionStatus): string[] {
  const lines = [
    '',
    `promotion: ${pr.reason}${pr.version === undefined ? '' : ` (${pr.version}${pr.eligibleTime === undefined ? '' : `, eligible ${pr.eligibleTime}`})`}`,
  ];
  for (const s of pr.stages ?? [])
    lines.push(`  stage ${s.cluster}${s.selector === undefined ? '' : ` (${s.selector})`}: ${s.state}: ${s.message}`);
  for (const r of pr.rejectedReports ?? []) lines.push(`  rejected ${r.file}: ${r.reason}`);
  if (pr.moreRejectedReports !== undefined) lines.push(`  and ${pr.moreRejectedReports} more rejected`);
  return lines;
}
