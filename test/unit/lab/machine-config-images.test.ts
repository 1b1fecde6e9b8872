// The lab reads component images out of machine configs the way `talosctl upgrade-k8s` patches
// them, and the kubelet version out of an image tag the way the Node reports it.
import assert from 'node:assert/strict';
import { versionOfImage } from '../../lab/fleet/static-pods.js';
import { configImages, imageChanges, machineConfigYaml, MULTI_DOC_KINDS } from '../../lab/talos/machine-config.js';
import { SimNode, TEST_TIMINGS } from '../../lab/talos/node.js';
import { createRecordingFleet } from '../../lab/talos/recording-fleet.js';
import { waitFor } from '../../lab/wait.js';

const cp = machineConfigYaml({
  name: 'cp-1',
  role: 'controlplane',
  ip: '127.0.0.1',
  talosVersion: 'v1.13.9',
  kubernetesVersion: 'v1.35.2',
  schematic: 'abc',
  clusterName: 'lab',
  controlPlaneEndpoint: 'https://127.0.0.1:6443',
});

describe('lab: machine config images', () => {
  it('versionOfImage: tag version, kubelet variant suffix dropped, pre-release kept, none without a version tag', () => {
    const cases: [string | undefined, string | undefined][] = [
      ['ghcr.io/siderolabs/kubelet:v1.35.2', 'v1.35.2'],
      ['ghcr.io/siderolabs/kubelet:v1.35.2-fat', 'v1.35.2'],
      ['ghcr.io/siderolabs/kubelet:v1.35.2-slim', 'v1.35.2'],
      ['registry.k8s.io/kube-apiserver:v1.37.0-rc.0', 'v1.37.0-rc.0'],
      ['127.0.0.1:5000/kubelet:v1.36.3', 'v1.36.3'],
      ['ghcr.io/siderolabs/kubelet:latest', undefined],
      ['ghcr.io/siderolabs/kubelet', undefined],
      [undefined, undefined],
    ];
    for (const [image, version] of cases) assert.equal(versionOfImage(image), version, String(image));
  });

  it('configImages reads all five paths of a control-plane config; a worker config has only the kubelet', () => {
    assert.deepEqual(configImages(cp), {
      kubelet: 'ghcr.io/siderolabs/kubelet:v1.35.2',
      apiServer: 'registry.k8s.io/kube-apiserver:v1.35.2',
      controllerManager: 'registry.k8s.io/kube-controller-manager:v1.35.2',
      scheduler: 'registry.k8s.io/kube-scheduler:v1.35.2',
      proxy: 'registry.k8s.io/kube-proxy:v1.35.2',
    });
    const worker = machineConfigYaml({
      name: 'w',
      role: 'worker',
      ip: '127.0.0.2',
      talosVersion: 'v1.13.9',
      kubernetesVersion: 'v1.35.2',
      schematic: 'abc',
      clusterName: 'lab',
      controlPlaneEndpoint: 'https://127.0.0.1:6443',
    });
    assert.deepEqual(configImages(worker), {
      kubelet: 'ghcr.io/siderolabs/kubelet:v1.35.2',
      apiServer: undefined,
      controllerManager: undefined,
      scheduler: undefined,
      proxy: undefined,
    });
  });

  it('configImages finds the v1alpha1 document of a multi-document config', () => {
    const multi = `apiVersion: v1alpha1\nkind: HostnameConfig\nhostname: x\n---\n${cp}`;
    assert.equal(configImages(multi).scheduler, 'registry.k8s.io/kube-scheduler:v1.35.2');
  });

  it('imageChanges lists exactly the moved images, in config order', () => {
    const next = cp
      .replace('kube-scheduler:v1.35.2', 'kube-scheduler:v1.36.3')
      .replace('kubelet:v1.35.2', 'kubelet:v1.36.3');
    assert.deepEqual(imageChanges(cp, next), [
      {
        path: 'machine.kubelet.image',
        from: 'ghcr.io/siderolabs/kubelet:v1.35.2',
        to: 'ghcr.io/siderolabs/kubelet:v1.36.3',
      },
      {
        path: 'cluster.scheduler.image',
        from: 'registry.k8s.io/kube-scheduler:v1.35.2',
        to: 'registry.k8s.io/kube-scheduler:v1.36.3',
      },
    ]);
    assert.deepEqual(imageChanges(cp, cp), []);
  });
  it('multiDocs appends the Talos 1.14 component documents with image set; the node reads those images from the documents', () => {
    const input = {
      name: 'cp-1',
      role: 'controlplane' as const,
      ip: '127.0.0.1',
      talosVersion: 'v1.14.1',
      kubernetesVersion: 'v1.35.2',
      schematic: 'abc',
      clusterName: 'lab',
      controlPlaneEndpoint: 'https://127.0.0.1:6443',
    };
    const multi = machineConfigYaml({ ...input, multiDocs: MULTI_DOC_KINDS });
    assert.ok(multi.startsWith(machineConfigYaml(input)), 'the v1alpha1 document is unchanged, its fields present');
    assert.match(
      multi,
      /---\napiVersion: v1alpha1\nkind: KubeletConfig\nimage: ghcr.io\/siderolabs\/kubelet:v1.35.2\n/,
    );
    assert.deepEqual(configImages(multi), configImages(cp));
    // A document wins over the (now stale) v1alpha1 path.
    const moved = multi.replace(
      'kind: KubeSchedulerConfig\nimage: registry.k8s.io/kube-scheduler:v1.35.2',
      'kind: KubeSchedulerConfig\nimage: registry.k8s.io/kube-scheduler:v1.36.3',
    );
    assert.equal(configImages(moved).scheduler, 'registry.k8s.io/kube-scheduler:v1.36.3');
    assert.deepEqual(imageChanges(multi, moved), [
      {
        path: 'KubeSchedulerConfig.image',
        from: 'registry.k8s.io/kube-scheduler:v1.35.2',
        to: 'registry.k8s.io/kube-scheduler:v1.36.3',
      },
    ]);
    // Changing the shadowed v1alpha1 field moves nothing, but the change is reported at its path.
    const wrong = multi.replace(
      '    image: registry.k8s.io/kube-scheduler:v1.35.2',
      '    image: registry.k8s.io/kube-scheduler:v1.36.3',
    );
    assert.notEqual(wrong, multi);
    assert.equal(configImages(wrong).scheduler, 'registry.k8s.io/kube-scheduler:v1.35.2');
    assert.deepEqual(imageChanges(multi, wrong), [
      {
        path: 'cluster.scheduler.image',
        from: 'registry.k8s.io/kube-scheduler:v1.35.2',
        to: 'registry.k8s.io/kube-scheduler:v1.36.3',
      },
    ]);
    // A document without image names none (Talos's default).
    assert.equal(
      configImages(
        multi.replace('kind: KubeletConfig\nimage: ghcr.io/siderolabs/kubelet:v1.35.2\n', 'kind: KubeletConfig\n'),
      ).kubelet,
      undefined,
    );
  });

  it('a worker with multiDocs gets only the documents of the components it runs', () => {
    const worker = machineConfigYaml({
      name: 'w',
      role: 'worker',
      ip: '127.0.0.2',
      talosVersion: 'v1.14.1',
      kubernetesVersion: 'v1.35.2',
      schematic: 'abc',
      clusterName: 'lab',
      controlPlaneEndpoint: 'https://127.0.0.1:6443',
      multiDocs: MULTI_DOC_KINDS,
    });
    assert.deepEqual(worker.match(/^kind: .*$/gm), ['kind: KubeletConfig']);
  });
  it('a simulated node refuses multiDocs below Talos v1.14, and on v1.14 a moved KubeletConfig image restarts its kubelet while a moved stale field does not', async () => {
    const spec = {
      name: 'cp-1',
      role: 'controlplane' as const,
      talosVersion: 'v1.13.9',
      kubernetesVersion: 'v1.35.2',
      schematic: 'abc',
      internalIP: '127.0.0.1',
    };
    const old = createRecordingFleet([spec]);
    assert.throws(
      () => new SimNode(old.nodes()[0]!, old, () => TEST_TIMINGS, 'lab', 'https://127.0.0.1:6443', ['KubeletConfig']),
      /node cp-1 runs Talos v1\.13\.9: the KubeletConfig document\(s\) exist from Talos v1\.14 on/,
    );
    const fleet = createRecordingFleet([{ ...spec, talosVersion: 'v1.14.0' }]);
    const node = new SimNode(fleet.nodes()[0]!, fleet, () => TEST_TIMINGS, 'lab', 'https://127.0.0.1:6443', [
      'KubeletConfig',
    ]);
    try {
      assert.match(node.config, /kind: KubeletConfig\nimage: ghcr.io\/siderolabs\/kubelet:v1.35.2\n$/);
      node.applyConfig(
        node.config.replace(
          '    image: ghcr.io/siderolabs/kubelet:v1.35.2',
          '    image: ghcr.io/siderolabs/kubelet:v1.36.3',
        ),
      );
      assert.equal(node.kubelet, 'running', 'the stale v1alpha1 field moved nothing');
      node.applyConfig(
        node.config.replace(
          'kind: KubeletConfig\nimage: ghcr.io/siderolabs/kubelet:v1.35.2',
          'kind: KubeletConfig\nimage: ghcr.io/siderolabs/kubelet:v1.36.3',
        ),
      );
      assert.equal(node.kubelet, 'stopped');
      await waitFor(() => fleet.calls.find((c) => c.op === 'setKubelet'), {
        timeoutMs: 30_000,
        description: 'the kubelet restarted',
      });
      assert.deepEqual(
        fleet.calls.filter((c) => c.op === 'setKubelet').map((c) => c.kubelet?.version),
        ['v1.36.3'],
      );
    } finally {
      node.stop();
    }
  });
});
