// HealthCheckAccess (controller/preflight/checks.ts): every kind a health check reads is reviewed with
// SelfSubjectAccessReview before the rollout, so a missing grant is named instead of a 403 mid-rollout.
import assert from 'node:assert/strict';
import { healthCheck } from '../../../schemas/health.js';
import { healthCheckAccess } from '../../../controller/preflight/checks.js';
import { describeUser, type DynamicResource, type ObjectSource } from '../../../controller/kube/dynamic.js';
import { testContext } from '../../support/op-context.js';

const served: Record<string, DynamicResource> = {
  'longhorn.io/v1beta2|Volume': {
    apiVersion: 'longhorn.io/v1beta2',
    kind: 'Volume',
    group: 'longhorn.io',
    version: 'v1beta2',
    plural: 'volumes',
    namespaced: true,
  },
  'ceph.rook.io/v1|CephCluster': {
    apiVersion: 'ceph.rook.io/v1',
    kind: 'CephCluster',
    group: 'ceph.rook.io',
    version: 'v1',
    plural: 'cephclusters',
    namespaced: true,
  },
};

function source(allowed: Set<string>): ObjectSource & { reviews: string[] } {
  const reviews: string[] = [];
  return {
    reviews,
    discover: (_ctx, apiVersion, kind) => Promise.resolve(served[`${apiVersion}|${kind}`]),
    informer: () => {
      throw new Error('not used');
    },
    list: () => Promise.reject(new Error('not used')),
    deniedVerbs: (_ctx, r, namespace, verbs) => {
      reviews.push(`${r.plural}.${r.group} ${namespace ?? '*'} ${verbs.join(',')}`);
      return Promise.resolve(verbs.filter((v) => !allowed.has(`${v} ${r.plural}`)));
    },
    whoAmI: () => Promise.resolve(describeUser('system:serviceaccount:kangal-patch:kangal-patch')),
  };
}

const check = (name: string, apiVersion: string, kind: string, namespace?: string) =>
  healthCheck.parse({ name, apiVersion, kind, namespace, expr: 'true' });

describe('preflight: HealthCheckAccess', function () {
  it('fails naming the grant, the resource and the ServiceAccount', async function () {
    const objects = source(new Set(['get volumes', 'list volumes', 'watch volumes']));
    const c = await healthCheckAccess(testContext(), objects, [
      check('volumes', 'longhorn.io/v1beta2', 'Volume', 'longhorn-system'),
      check('ceph', 'ceph.rook.io/v1', 'CephCluster', 'rook-ceph'),
    ]);
    assert.equal(c.passed, false);
    assert.equal(c.name, 'HealthCheckAccess');
    assert.equal(
      c.message,
      'grant get/list/watch on cephclusters.ceph.rook.io in namespace rook-ceph to ServiceAccount kangal-patch/kangal-patch (check ceph; denied: get, list, watch)',
    );
    assert.deepEqual(objects.reviews, [
      'volumes.longhorn.io longhorn-system get,list,watch',
      'cephclusters.ceph.rook.io rook-ceph get,list,watch',
    ]);
  });

  it('passes when every kind can be read; reviews each kind and namespace once', async function () {
    const objects = source(new Set(['get volumes', 'list volumes', 'watch volumes']));
    const c = await healthCheckAccess(testContext(), objects, [
      check('a', 'longhorn.io/v1beta2', 'Volume'),
      check('b', 'longhorn.io/v1beta2', 'Volume'),
    ]);
    assert.equal(c.passed, true, c.message);
    assert.equal(objects.reviews.length, 1);
  });

  it('fails on a kind the API server does not serve', async function () {
    const c = await healthCheckAccess(testContext(), source(new Set()), [
      check('pg', 'postgresql.cnpg.io/v1', 'Cluster'),
    ]);
    assert.equal(c.passed, false);
    assert.match(
      c.message,
      /check pg: the API server does not serve kind Cluster in postgresql.cnpg.io\/v1 \(install its CRD/,
    );
  });

  it('names users that are not ServiceAccounts as users', function () {
    assert.equal(describeUser('kubernetes-admin'), 'user kubernetes-admin');
  });
});
