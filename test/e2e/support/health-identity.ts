// Health checks read as the ServiceAccount the controller impersonates (kangal-patch-health in the
// operator namespace, --health-check-service-account's default), which holds only what the operator
// grants it: the tests grant what their checks read, as docs/health-gates.md tells an operator to.
import { RbacAuthorizationV1Api, type KubeConfig } from '@kubernetes/client-node';
import { HEALTH_SERVICE_ACCOUNT } from '../../support/manifests.js';
import { OPERATOR_NAMESPACE } from './job-lab.js';

/** A ClusterRole with get/list/watch on `resources` ("plural.group", or "plural" for the core group), bound to the health-check identity. */
export async function grantHealthReads(kc: KubeConfig, name: string, resources: readonly string[]): Promise<void> {
  const rbac = kc.makeApiClient(RbacAuthorizationV1Api);
  const rules = resources.map((r) => {
    const dot = r.indexOf('.');
    return {
      apiGroups: [dot < 0 ? '' : r.slice(dot + 1)],
      resources: [dot < 0 ? r : r.slice(0, dot)],
      verbs: ['get', 'list', 'watch'],
    };
  });
  await rbac.createClusterRole({ body: { metadata: { name }, rules } });
  await rbac.createClusterRoleBinding({
    body: {
      metadata: { name },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name },
      subjects: [{ kind: 'ServiceAccount', name: HEALTH_SERVICE_ACCOUNT, namespace: OPERATOR_NAMESPACE }],
    },
  });
}
