// The child plan an auto-update proposal adds: built from the template's text as the GitOps loop
// loaded it, checked with the loader the GitOps loop uses, placed beside the template's file; and its
// preview on the cluster as it is now (the rollout and the read-only preflight) for the PR body.
import { posix } from 'node:path';
import { Annotation } from '../../../schemas/api.js';
import type { PatchPlanDocument } from '../../../schemas/patchplan.js';
import { childPlanDocument, type ChildPlanFile } from '../../core/auto-update/child-plan.js';
import { childPlanName } from '../../core/names.js';
import { selectNodes } from '../../core/plan/selection.js';
import { previewRollout } from '../../core/preview.js';
import type { PlanView } from '../../kube/views.js';
import { otherPlansOf } from '../../rollout/plan/preflight-port.js';
import type { PreviewReport } from '../../preview/format.js';
import { previewPreflight, type PreviewPreflight } from '../../preview/preflight.js';
import { apiServerFacts } from '../../rollout/kubernetes-facts.js';
import { withTimeout, type OpContext } from '../../runtime/context.js';
import { OutcomeError, OutcomeKind } from '../../runtime/outcome.js';
import { loadPlanFile } from '../load/index.js';
import type { AutoUpdateDeps } from './deps.js';

/** The child plan a proposal writes: the template's file, the child's file beside it, and the child as loaded. */
interface ChildPlan {
  file: string;
  child: ChildPlanFile;
  childFile: string;
  doc: PatchPlanDocument;
}

const PREFLIGHT_MS = 60_000;

/**
 * The child plan of `template` for `version`: the template's file, the child's file beside it, and
 * the child as the GitOps loop will load it. Throws while the template's text is not loaded, and
 * when the child would not load.
 */
export function childPlanFor(
  deps: Pick<AutoUpdateDeps, 'config' | 'templateText'>,
  template: PlanView,
  version: string,
): ChildPlan {
  const key = template.name;
  const file = template.annotations[Annotation.SourcePath];
  const text = file === undefined ? undefined : deps.templateText(file);
  if (file === undefined || text === undefined) {
    throw new OutcomeError({
      kind: OutcomeKind.Transient,
      reason: 'TemplateNotLoaded',
      message: `the text of template ${key}${file === undefined ? ' (no source-path annotation: is it managed from Git?)' : ` (${file})`} is not loaded from Git yet`,
    });
  }
  const child = childPlanDocument(text, key, version);
  if (child instanceof Error)
    throw new OutcomeError({
      kind: OutcomeKind.Stalled,
      reason: 'InvalidTemplate',
      message: `${file}: ${child.message}`,
    });
  const dir = posix.dirname(file);
  const childFile = dir === '.' ? child.fileName : `${dir}/${child.fileName}`;
  // The proposed file must pass the same loader the GitOps loop (and `kangal-patch validate`) uses.
  const loaded = loadPlanFile(
    { file: childFile, content: child.text },
    { operatorNamespace: deps.config.operatorNamespace },
  );
  const doc = loaded.plans[0]?.plan;
  if (!doc || loaded.problems.length > 0) {
    const why = loaded.problems[0];
    throw new OutcomeError({
      kind: OutcomeKind.Stalled,
      reason: 'InvalidChildPlan',
      message: `the child plan of ${key} for ${version} would not load${why ? `: ${why.path} ${why.message}` : ''}`,
    });
  }
  return { file, child, childFile, doc };
}

/** The child plan file of a proposal: beside its template's file. */
export function childFileOf(template: PlanView, version: string): string | undefined {
  const file = template.annotations[Annotation.SourcePath];
  if (file === undefined) return undefined;
  const dir = posix.dirname(file);
  const name = `${childPlanName(template.name, version)}.yaml`;
  return dir === '.' ? name : `${dir}/${name}`;
}

/** The rollout of the child plan `doc` (in `file`) on the cluster as it is now, and the preflight checks that could run. */
export async function previewOf(
  ctx: OpContext,
  deps: Pick<AutoUpdateDeps, 'config' | 'informers' | 'clock' | 'preflight'>,
  doc: PatchPlanDocument,
  file: string,
): Promise<PreviewReport> {
  const { config, informers, clock } = deps;
  const nodes = informers.nodes.list();
  const { spec } = doc;
  const preview = previewRollout({ now: clock.now(), spec, nodes, ownNode: config.ownNode });
  let preflight: PreviewPreflight;
  try {
    preflight = await previewPreflight(withTimeout(ctx, PREFLIGHT_MS), deps.preflight, {
      spec,
      selection: selectNodes(spec, nodes, config.ownNode),
      nodes: new Map(nodes.map((n) => [n.name, n])),
      otherPlans: otherPlansOf(informers.patchPlans.list(), nodes, doc.metadata.name),
      apiServers: apiServerFacts(informers),
      operatorNamespace: config.operatorNamespace,
    });
  } catch (err) {
    if (ctx.signal.aborted) throw err;
    preflight = {
      checks: [],
      skipped: [
        { name: 'Preflight', message: `could not run now: ${err instanceof Error ? err.message : String(err)}` },
      ],
    };
  }
  return { plan: { name: doc.metadata.name, file }, preview, preflight };
}
