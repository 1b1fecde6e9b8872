// Plan + jobs (kube views) → the two report files. The document and Markdown come from the pure
// core; this adds the YAML serialisation and the paths.
import { createHash } from 'node:crypto';
import { stringify } from 'yaml';
import {
  renderMarkdown,
  reportDocument,
  type ReportDocument,
  type ReportJob,
  type ReportPlan,
  type ReportSettings,
} from '../../core/report/index.js';
import { Annotation } from '../../../schemas/api.js';
import type { JobView, PlanView } from '../../kube/views.js';
import { signaturePath, type ReportSigner } from '../promotion/signature.js';

export interface ReportFiles {
  /** `status/<cluster>/<plan>.md` */
  markdownPath: string;
  /** `status/<cluster>/<plan>.yaml` */
  yamlPath: string;
  markdown: string;
  yaml: string;
  /** `status/<cluster>/<plan>.sig`: the YAML twin signed by this cluster's controller (with --report-signing-key-file). */
  signature?: { path: string; text: string } | undefined;
}

export type BeforeVersions = { talos: string | undefined; kubernetes: string | undefined };

function reportPlanOf(plan: PlanView): ReportPlan {
  return {
    name: plan.name,
    uid: plan.uid,
    order: plan.spec?.strategy.order,
    status: plan.status,
    specCommit: plan.annotations[Annotation.SpecCommit],
    sourceCommit: plan.annotations[Annotation.SourceCommit],
    sourcePath: plan.annotations[Annotation.SourcePath],
  };
}

function reportJobOf(job: JobView, before: BeforeVersions | undefined): ReportJob {
  return {
    name: job.name,
    nodeName: job.spec?.nodeName ?? job.name,
    group: job.spec?.group ?? '',
    status: job.status,
    // Recorded in status (restart-safe); what the reporter saw first only for jobs written before that field existed.
    before: {
      talos: job.status.initialTalosVersion ?? before?.talos,
      kubernetes: job.status.initialKubernetesVersion ?? before?.kubernetes,
    },
    targetTalos: job.spec?.target.talosVersion,
    targetKubernetes: job.spec?.target.kubernetesVersion,
  };
}

export function reportPaths(cluster: string, plan: string): { markdownPath: string; yamlPath: string } {
  return { markdownPath: `status/${cluster}/${plan}.md`, yamlPath: `status/${cluster}/${plan}.yaml` };
}

export interface RenderInput {
  plan: PlanView;
  jobs: readonly JobView[];
  /** Versions each node ran before its job, by job UID (for jobs written before status recorded them). */
  before: ReadonlyMap<string, BeforeVersions>;
  settings: ReportSettings;
  /** Signs the YAML twin; no .sig file without it. */
  signer?: ReportSigner | undefined;
}

export function renderReport({ plan, jobs, before, settings: s, signer }: RenderInput): ReportFiles {
  const doc = reportDocument(
    reportPlanOf(plan),
    jobs.map((j) => reportJobOf(j, before.get(j.uid))),
    s,
  );
  const paths = reportPaths(s.cluster, plan.name);
  const yaml = `# Written by KangalPatch from the PatchPlan status (machine-readable twin of ${plan.name}.md).\n${reportYaml(doc)}`;
  const signature = signer && { path: signaturePath(paths.yamlPath), text: signer.sign(paths.yamlPath, yaml) };
  return { ...paths, markdown: renderMarkdown(doc), yaml, ...(signature ? { signature } : {}) };
}

/** SHA-256 of the two report files (NUL between them; the signature follows from the YAML). */
export function contentDigest(files: ReportFiles): string {
  return createHash('sha256').update(files.markdown).update('\0').update(files.yaml).digest('hex');
}

/** Plain YAML: no anchors, wide lines, keys in the document's fixed order. */
const YAML_OPTIONS = { aliasDuplicateObjects: false, lineWidth: 0 } as const;

/** `text`'s lines indented by `spaces` (empty lines stay empty, as the YAML library writes them). */
const indented = (text: string, spaces: number): string => text.replace(/^(?=.)/gm, ' '.repeat(spaces));

/**
 * The document as `stringify(doc)` writes it, one node at a time: the library builds a node tree of
 * the whole value before writing it, which for thousands of nodes (~40 MiB at 5,000) outlives the
 * young generation and grows the heap the process keeps; one node's tree dies young. `groups` and
 * each group's `nodes` are the last keys of their maps, so the pieces join in the same order.
 */
export function reportYaml(doc: ReportDocument): string {
  const { groups, ...head } = doc;
  if (groups.length === 0) return stringify(doc, YAML_OPTIONS);
  const parts = [stringify(head, YAML_OPTIONS), 'groups:\n'];
  for (const { nodes, ...group } of groups) {
    if (nodes.length === 0) {
      parts.push(indented(stringify([{ ...group, nodes }], YAML_OPTIONS), 2));
      continue;
    }
    parts.push(indented(stringify([group], YAML_OPTIONS), 2), '    nodes:\n');
    for (const node of nodes) parts.push(indented(stringify([node], YAML_OPTIONS), 6));
  }
  return parts.join('');
}
