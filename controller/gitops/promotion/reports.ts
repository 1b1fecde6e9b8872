// Upstream rollout reports as promotion evidence: the YAML twins under status/<cluster>/ of the
// loaded commit, each accepted only when its signature verifies with that cluster's trusted key
// and its content names the cluster and plan its path names. Everything else is rejected with the
// reason (shown in the template's status), never silently dropped. The set of reports is bound by
// the cluster's signed index (report-index.ts): nothing listed may be missing or changed, nothing
// unlisted counts, and an index older than one already seen refuses the cluster's evidence.
import { z } from 'zod';
import { epoch } from '../../core/time.js';
import { checkReportIndex, reportIndexPath, unindexedReason } from '../../core/promotion/report-index.js';
import type { RefusedCluster, RejectedReport, UpstreamReport } from '../../core/promotion/types.js';
import { DEFAULT_LIMITS } from '../load/limits.js';
import { parseYamlFile } from '../load/yaml.js';
import type { ReportTree } from '../source/reports.js';
import { firstIssue, parseReportIndex, sha256 } from './report-index.js';
import { signaturePath, verifyReport, type TrustedKeys } from './signature.js';

const nullable = <T extends z.ZodType>(t: T) => t.nullable().optional();
const reportFile = z.object({
  apiVersion: z.literal('kangalpatch.ozalp.dk/v1alpha1'),
  kind: z.literal('RolloutReport'),
  cluster: z.string(),
  plan: z.object({ name: z.string(), uid: z.string() }),
  phase: nullable(z.string()),
  target: z.object({ talosVersion: nullable(z.string()), kubernetesVersion: nullable(z.string()) }),
  startTime: nullable(z.string()),
  completionTime: nullable(z.string()),
  nodes: z.object({ total: nullable(z.number()), completed: nullable(z.number()), failed: nullable(z.number()) }),
  groups: z.array(
    z.object({
      nodes: z.array(
        z.object({ name: z.string(), failure: nullable(z.string()), cordonedSeconds: nullable(z.number()) }),
      ),
    }),
  ),
});

export interface UpstreamEvidence {
  commit: string;
  reports: UpstreamReport[];
  rejected: RejectedReport[];
  /** Clusters whose whole evidence is refused (their index is missing, broken, replayed or does not match the files), with why. */
  refused: RefusedCluster[];
  /** cluster → the sequence of its verified index (clusters whose evidence is not refused and that have an index). */
  sequences: Record<string, number>;
}

function parseReport(file: string, cluster: string, plan: string, text: string): UpstreamReport | string {
  const parsed = parseYamlFile(text, DEFAULT_LIMITS);
  const doc = parsed.documents[0];
  const problem = parsed.problems[0] ?? doc?.problems[0];
  if (!doc || problem) return `does not parse as YAML${problem ? `: ${problem.message}` : ''}`;
  const r = reportFile.safeParse(doc.value);
  if (!r.success) return `is not a RolloutReport: ${firstIssue(r.error)}`.trim();
  const d = r.data;
  if (d.cluster !== cluster || d.plan.name !== plan)
    return `names cluster ${d.cluster} and plan ${d.plan.name}, not the ${cluster}/${plan} its path says`;
  return { file, cluster, plan, ...facts(d) };
}

const some = <T>(v: T | null | undefined): T | undefined => v ?? undefined;

function facts(d: z.output<typeof reportFile>): Omit<UpstreamReport, 'file' | 'cluster' | 'plan'> {
  const nodes = d.groups.flatMap((g) => g.nodes);
  return {
    phase: some(d.phase),
    talosVersion: some(d.target.talosVersion),
    kubernetesVersion: some(d.target.kubernetesVersion),
    startTime: epoch(some(d.startTime)),
    completionTime: epoch(some(d.completionTime)),
    nodes: { total: d.nodes.total ?? nodes.length, completed: d.nodes.completed ?? 0, failed: d.nodes.failed ?? 0 },
    cordonedSeconds: nodes.reduce((sum, n) => sum + (n.cordonedSeconds ?? 0), 0),
    failures: nodes.flatMap((n) => (n.failure === null || n.failure === undefined ? [] : [`${n.name}: ${n.failure}`])),
  };
}

/** The report files under status/ of one commit (or of a working tree, `commit` then naming it). */
export interface EvidenceFiles {
  commit: string;
  tree: ReportTree;
}

/**
 * The verified reports of `clusters` (the ones promotion stages name) in the tree; the rest of their
 * files rejected with a reason. A cluster's reports count only under its signed index
 * (status/<cluster>/index.yaml): a missing, changed or unlisted report, a gap, or an index older than
 * `seen` (cluster → the highest sequence already seen downstream) refuses the cluster's evidence or the file.
 */
export function upstreamEvidence(
  { commit, tree }: EvidenceFiles,
  keys: TrustedKeys,
  clusters: ReadonlySet<string>,
  seen: Readonly<Record<string, number>> = {},
): UpstreamEvidence {
  const out: UpstreamEvidence = { commit, reports: [], rejected: [], refused: [], sequences: {} };
  for (const s of tree.skipped) if (clusters.has(s.file.split('/')[1] ?? '')) out.rejected.push(s);
  const byCluster = reportsByCluster(tree, clusters);
  for (const cluster of [...clusters].sort()) {
    const files = byCluster.get(cluster) ?? new Map<string, string>();
    const upstream: UpstreamCluster = { tree, keys, cluster };
    const index = indexOf(upstream, files, seen[cluster]);
    if (index.refused !== undefined) {
      out.refused.push({ cluster, reason: index.refused });
      out.rejected.push({ file: reportIndexPath(cluster), reason: index.refused });
      continue;
    }
    if (index.sequence !== undefined) out.sequences[cluster] = index.sequence;
    for (const [file, text] of files) {
      const report = judgeReport(upstream, file, text, index);
      if (typeof report === 'string') out.rejected.push({ file, reason: report });
      else out.reports.push(report);
    }
  }
  return out;
}

/** cluster → its report YAML twins in the tree (path → text), for the clusters named; the index is no report. */
function reportsByCluster(tree: ReportTree, clusters: ReadonlySet<string>): Map<string, Map<string, string>> {
  const byCluster = new Map<string, Map<string, string>>();
  for (const [file, text] of tree.files) {
    const m = /^status\/([^/]+)\/(.+)\.yaml$/.exec(file);
    if (!m?.[1] || !m[2] || !clusters.has(m[1]) || file === reportIndexPath(m[1])) continue;
    const files = byCluster.get(m[1]) ?? new Map<string, string>();
    files.set(file, text);
    byCluster.set(m[1], files);
  }
  return byCluster;
}

/** One upstream cluster: the tree its files are read from, and the keys that verify its signatures. */
interface UpstreamCluster {
  tree: ReportTree;
  keys: TrustedKeys;
  cluster: string;
}

/** One report file of a cluster whose index holds: the report, or why it is not evidence (its signature first). */
function judgeReport(
  { tree, keys, cluster }: UpstreamCluster,
  file: string,
  text: string,
  index: { sequence?: number; unindexed: ReadonlySet<string> },
): UpstreamReport | string {
  const untrusted = verifyReport(keys, cluster, {
    yamlPath: file,
    yaml: text,
    sigFile: tree.files.get(signaturePath(file)),
  });
  if (untrusted !== undefined) return untrusted;
  if (index.unindexed.has(file)) return unindexedReason(cluster, file, index.sequence);
  const report = parseReport(file, cluster, file.slice(`status/${cluster}/`.length, -'.yaml'.length), text);
  return typeof report === 'string' ? `${file} ${report}` : report;
}

/**
 * One cluster's index, checked: refused (the reason), or its sequence (undefined: no index and none
 * seen before, so every report is unindexed) and the report files it does not list.
 */
function indexOf(
  { tree, keys, cluster }: UpstreamCluster,
  files: ReadonlyMap<string, string>,
  seen: number | undefined,
): { refused?: string; sequence?: number; unindexed: Set<string> } {
  const path = reportIndexPath(cluster);
  const text = tree.files.get(path);
  if (text === undefined) {
    if (seen !== undefined)
      return {
        refused: `cluster ${cluster}: ${path} is missing, but sequence ${seen} was seen: ${cluster}'s evidence is refused`,
        unindexed: new Set(),
      };
    return { unindexed: new Set(files.keys()) };
  }
  const untrusted = verifyReport(keys, cluster, {
    yamlPath: path,
    yaml: text,
    sigFile: tree.files.get(signaturePath(path)),
  });
  if (untrusted !== undefined)
    return {
      refused: `cluster ${cluster}: ${path}: ${untrusted}; ${cluster}'s evidence is refused`,
      unindexed: new Set(),
    };
  const index = parseReportIndex(text);
  if (typeof index === 'string')
    return { refused: `cluster ${cluster}: ${path} ${index}; ${cluster}'s evidence is refused`, unindexed: new Set() };
  const present = new Map([...files].map(([file, yaml]) => [file, sha256(yaml)]));
  const checked = checkReportIndex({ cluster, index, present, seen });
  if (!checked.ok) return { refused: checked.reason, unindexed: new Set() };
  return { sequence: checked.sequence, unindexed: new Set(checked.unindexed) };
}
