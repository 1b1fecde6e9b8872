// Upstream rollout reports as promotion evidence: the YAML twins under status/<cluster>/ of the
// loaded commit, each accepted only when its signature verifies with that cluster's trusted key
// and its content names the cluster and plan its path names. Everything else is rejected with the
// reason (shown in the template's status), never silently dropped.
import { z } from 'zod';
import { epoch } from '../../core/time.js';
import type { RejectedReport, UpstreamReport } from '../../core/promotion/types.js';
import { DEFAULT_LIMITS } from '../load/limits.js';
import { parseYamlFile } from '../load/yaml.js';
import type { ReportTree } from '../source/reports.js';
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
  groups: z.array(z.object({
    nodes: z.array(z.object({ name: z.string(), failure: nullable(z.string()), cordonedSeconds: nullable(z.number()) })),
  })),
});

export interface UpstreamEvidence {
  commit: string;
  reports: UpstreamReport[];
  rejected: RejectedReport[];
}

function parseReport(file: string, cluster: string, plan: string, text: string): UpstreamReport | string {
  const parsed = parseYamlFile(text, DEFAULT_LIMITS);
  const doc = parsed.documents[0];
  const problem = parsed.problems[0] ?? doc?.problems[0];
  if (!doc || problem) return `does not parse as YAML${problem ? `: ${problem.message}` : ''}`;
  const r = reportFile.safeParse(doc.value);
  if (!r.success) return `is not a RolloutReport: ${r.error.issues[0]?.path.join('.') ?? ''} ${r.error.issues[0]?.message ?? ''}`.trim();
  const d = r.data;
  if (d.cluster !== cluster || d.plan.name !== plan) return `names cluster ${d.cluster} and plan ${d.plan.name}, not the ${cluster}/${plan} its path says`;
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

/** The verified reports of `clusters` (the ones promotion stages name) in the tree; the rest of their files rejected with a reason. */
export function upstreamEvidence(commit: string, tree: ReportTree, keys: TrustedKeys, clusters: ReadonlySet<string>): UpstreamEvidence {
  const out: UpstreamEvidence = { commit, reports: [], rejected: [] };
  for (const s of tree.skipped) if (clusters.has(s.file.split('/')[1] ?? '')) out.rejected.push(s);
  for (const [file, text] of tree.files) {
    const m = /^status\/([^/]+)\/(.+)\.yaml$/.exec(file);
    if (!m?.[1] || !m[2] || !clusters.has(m[1])) continue;
    const [, cluster, plan] = m;
    const untrusted = verifyReport(keys, cluster, file, text, tree.files.get(signaturePath(file)));
    if (untrusted !== undefined) {
      out.rejected.push({ file, reason: untrusted });
      continue;
    }
    const report = parseReport(file, cluster, plan, text);
    if (typeof report === 'string') out.rejected.push({ file, reason: `${file} ${report}` });
    else out.reports.push(report);
  }
  return out;
}
