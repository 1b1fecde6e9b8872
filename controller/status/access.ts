// Before reading: are the CRDs installed, and may the viewer list (and watch) plans and jobs? Each
// answered with what to do about it, from the API's answers (discovery, SelfSubjectAccessReview),
// never from error text. Nodes are optional: the viewer ClusterRole grants plans and jobs only.
import { API_VERSION, Kind } from '../../schemas/api.js';
import { resourceName, type DynamicResource, type Kube } from '../kube/index.js';
import type { OpContext } from '../runtime/context.js';
import { isOutcomeError } from '../runtime/outcome.js';
import { StatusError } from './connect.js';

export interface Access {
  plans: DynamicResource;
  jobs: DynamicResource;
  /** The viewer may list (and watch) Nodes. */
  nodes: boolean;
}

const NODES: DynamicResource = {
  apiVersion: 'v1',
  kind: 'Node',
  group: '',
  version: 'v1',
  plural: 'nodes',
  namespaced: false,
};

/** An API call that failed before anything was read: unreachable, or the credentials refused. */
function unreachable(err: unknown, server: string): StatusError {
  if (isOutcomeError(err) && err.code === 401)
    return new StatusError(
      `${server} refused the credentials (401 Unauthorized): log in again, or check the kubeconfig's user`,
    );
  return new StatusError(`cannot read from ${server}: ${err instanceof Error ? err.message : String(err)}`);
}

async function discover(ctx: OpContext, kube: Kube, kind: string): Promise<DynamicResource> {
  let found: DynamicResource | undefined;
  try {
    found = await kube.objects.discover(ctx, API_VERSION, kind);
  } catch (err) {
    throw unreachable(err, kube.server);
  }
  if (found) return found;
  throw new StatusError(
    `${kube.server} does not serve ${kind} (${API_VERSION}): the KangalPatch CRDs are not installed. Install them with kubectl apply -k kustomize/crd (from the repository), or the kangal-patch Helm chart (installCRDs: true)`,
  );
}

/** The verbs the viewer lacks on `r`; none when the review itself cannot be made (the lists then say). */
async function denied(ctx: OpContext, kube: Kube, r: DynamicResource, verbs: readonly string[]): Promise<string[]> {
  try {
    return await kube.objects.deniedVerbs(ctx, r, undefined, verbs);
  } catch {
    return [];
  }
}

/** Who lacks which verb on which resource, and the role that grants it. */
async function forbidden(
  ctx: OpContext,
  kube: Kube,
  r: DynamicResource,
  lacking: readonly string[],
): Promise<StatusError> {
  const who = await kube.objects.whoAmI(ctx).catch(() => 'you');
  return new StatusError(
    `forbidden: ${who} may not ${lacking.join(' or ')} ${resourceName(r)} (cluster-wide). ` +
      'Bind the kangal-patch-viewer ClusterRole (get, list, watch on patchplans and patchjobs; aggregated into the built-in view role), ' +
      `e.g. kubectl create clusterrolebinding kangal-patch-viewer-<you> --clusterrole kangal-patch-viewer --user <you>`,
  );
}

/** `watch`: the viewer needs watch as well as list. */
export async function checkAccess(ctx: OpContext, kube: Kube, watch: boolean): Promise<Access> {
  const verbs = watch ? ['list', 'watch'] : ['list'];
  const plans = await discover(ctx, kube, Kind.PatchPlan);
  const jobs = await discover(ctx, kube, Kind.PatchJob);
  for (const r of [plans, jobs]) {
    const lacking = await denied(ctx, kube, r, verbs);
    if (lacking.length > 0) throw await forbidden(ctx, kube, r, lacking);
  }
  return { plans, jobs, nodes: (await denied(ctx, kube, NODES, verbs)).length === 0 };
}
