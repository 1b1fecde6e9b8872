// Plan + jobs (kube views) → the two report files. The document and Markdown come from the pure
// core; this adds the YAML serialisation and the paths.
import { stringify } from 'yaml';
import { renderMarkdown, reportDocument, type ReportJob, type ReportPlan, type ReportSettings } from '../../core/report/index.js';
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

export function reportPlanOf(plan: PlanView): ReportPlan {
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

export function reportJobOf(job: JobView, before: BeforeVersions | undefined): ReportJob {
  return {
    name: job.name,
    nodeName: job.spec?.nodeName ?? job.name,
    group: job.spec?.group ?? '',
    status: job.status,
    // Recorded in status (restart-safe); what the reporter saw first only for jobs written before that field existed.
    before: { talos: job.status.initialTalosVersion ?? before?.talos, kubernetes: job.status.initialKubernetesVersion ?? before?.kubernetes },
    targetTalos: job.spec?.target.talosVersion,
    targetKubernetes: job.spec?.target.kubernetesVersion,
  };
}

export function reportPaths(cluster: string, plan: string): { markdownPath: string; yamlPath: string } {
  return { markdownPath: `status/${cluster}/${plan}.md`, yamlPath: `status/${cluster}/${plan}.yaml` };
}

export function renderReport(plan: PlanView, jobs: readonly JobView[], before: ReadonlyMap<string, BeforeVersions>, s: ReportSettings, signer?: ReportSigner): ReportFiles {
  const doc = reportDocument(reportPlanOf(plan), jobs.map((j) => reportJobOf(j, before.get(j.uid))), s);
  const paths = reportPaths(s.cluster, plan.name);
  // Plain YAML: no anchors, wide lines, keys in the document's fixed order.
  const yaml = `# Written by KangalPatch from the PatchPlan status (machine-readable twin of ${plan.name}.md).\n${stringify(doc, { aliasDuplicateObjects: false, lineWidth: 0 })}`;
  const signature = signer && { path: signaturePath(paths.yamlPath), text: signer.sign(paths.yamlPath, yaml) };
  return { ...paths, markdown: renderMarkdown(doc), yaml, ...(signature ? { signature } : {}) };
}
