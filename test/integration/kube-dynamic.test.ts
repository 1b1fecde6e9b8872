// controller/kube/dynamic.ts (health-check objects) against the lab's real kube-apiserver: API
// discovery of a core kind, a group kind and a missing one; the object informer in one namespace
// (core group through the generic client, a custom resource through the custom-objects client);
// access reviews and the caller's identity.
import assert from 'node:assert/strict';
import { CustomObjectsApi } from '@kubernetes/client-node';
import { createKubeFromConfig, type Kube } from '../../controller/kube/adapter.js';
import type { ObjectView } from '../../controller/kube/dynamic.js';
import { systemClock } from '../../controller/runtime/clock.js';
import { mergePatch } from '../lab/kube.js';
import { waitFor } from '../lab/wait.js';
import { sharedCluster } from '../support/shared-cluster.js';
import { ensureNamespace, kubeFixture, testCtx, type KubeFixture } from '../support/kube-fixtures.js';
import { installVolumeCrd, VOLUMES } from '../support/longhorn.js';

const NS = 'kube-dynamic-test';

describe('controller/kube dynamic objects on the lab apiserver', function () {
  this.timeout(120_000);
  let f: KubeFixture;
  let kube: Kube;
  const stop = new AbortController();

  before(async function () {
    f = kubeFixture(await sharedCluster());
    await ensureNamespace(f, NS);
    installVolumeCrd(f.cluster.kubectl, f.cluster.kubeconfigPath);
    kube = createKubeFromConfig(f.kc, { operatorNamespace: NS, clock: systemClock });
  });
  after(function () {
    stop.abort();
  });

  it('discovers core and custom kinds; a kind the server does not serve is undefined', async function () {
    assert.deepEqual(await kube.objects.discover(testCtx(), 'v1', 'ConfigMap'), {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      group: '',
      version: 'v1',
      plural: 'configmaps',
      namespaced: true,
    });
    assert.deepEqual(await kube.objects.discover(testCtx(), 'longhorn.io/v1beta2', 'Volume'), {
      apiVersion: 'longhorn.io/v1beta2',
      kind: 'Volume',
      group: 'longhorn.io',
      version: 'v1beta2',
      plural: 'volumes',
      namespaced: true,
    });
    assert.equal(await kube.objects.discover(testCtx(), 'apps/v1', 'NoSuchKind'), undefined);
    assert.equal(
      await kube.objects.discover(testCtx(), 'postgresql.cnpg.io/v1', 'Cluster'),
      undefined,
      'an unknown group/version',
    );
  });

  it('an informer over a core kind in one namespace: lists, watches, keeps the objects bounded', async function () {
    const r = await kube.objects.discover(testCtx(), 'v1', 'ConfigMap');
    assert.ok(r);
    const informer = kube.objects.informer(r, NS);
    const seen: string[] = [];
    informer.onChange((key) => seen.push(key));
    await f.core.createNamespacedConfigMap({
      namespace: NS,
      body: {
        metadata: { name: 'before', annotations: { 'kubectl.kubernetes.io/last-applied-configuration': '{}' } },
        data: { ok: 'true' },
      },
    });
    informer.start(stop.signal);
    await informer.synced;
    const before = informer.list().find((o) => o.name === 'before');
    assert.equal((before?.object.data as Record<string, string> | undefined)?.ok, 'true');
    const md = before?.object.metadata as { managedFields?: unknown; annotations?: Record<string, string> };
    assert.equal(md.managedFields, undefined);
    assert.equal(md.annotations?.['kubectl.kubernetes.io/last-applied-configuration'], undefined);
    await f.core.patchNamespacedConfigMap(
      { namespace: NS, name: 'before', body: { data: { ok: 'false' } } },
      mergePatch,
    );
    await waitFor(
      () =>
        (informer.get(`${NS}/before`)?.object.data as Record<string, string> | undefined)?.ok === 'false' || undefined,
      { timeoutMs: 10_000, description: 'the change watched' },
    );
    assert.ok(seen.includes(`${NS}/before`));
  });

  it('an informer over a custom resource, cluster-wide', async function () {
    const r = await kube.objects.discover(testCtx(), 'longhorn.io/v1beta2', 'Volume');
    assert.ok(r);
    const informer = kube.objects.informer(r, undefined);
    informer.start(stop.signal);
    await informer.synced;
    const custom = f.kc.makeApiClient(CustomObjectsApi);
    await custom.createNamespacedCustomObject({
      ...VOLUMES,
      namespace: NS,
      body: {
        apiVersion: 'longhorn.io/v1beta2',
        kind: 'Volume',
        metadata: { name: 'v1', namespace: NS },
        status: { robustness: 'healthy' },
      },
    });
    const v = await waitFor<ObjectView>(() => informer.get(`${NS}/v1`), {
      timeoutMs: 10_000,
      description: 'the volume watched',
    });
    assert.deepEqual(v.object.status, { robustness: 'healthy' });
  });

  it('reviews access and names the caller', async function () {
    const r = await kube.objects.discover(testCtx(), 'longhorn.io/v1beta2', 'Volume');
    assert.ok(r);
    assert.deepEqual(
      await kube.objects.deniedVerbs(testCtx(), r, NS, ['get', 'list', 'watch']),
      [],
      'the lab admin may read volumes',
    );
    assert.match(await kube.objects.whoAmI(testCtx()), /^user /);
  });
});
