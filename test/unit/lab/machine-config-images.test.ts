// The lab reads component images out of machine configs the way `talosctl upgrade-k8s` patches
// them, and the kubelet version out of an image tag the way the Node reports it.
import assert from 'node:assert/strict';
import { versionOfImage } from '../../lab/fleet/static-pods.js';
import { configImages, imageChanges, machineConfigYaml } from '../../lab/talos/machine-config.js';

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
    const worker = machineConfigYaml({ name: 'w', role: 'worker', ip: '127.0.0.2', talosVersion: 'v1.13.9', kubernetesVersion: 'v1.35.2', schematic: 'abc', clusterName: 'lab', controlPlaneEndpoint: 'https://127.0.0.1:6443' });
    assert.deepEqual(configImages(worker), { kubelet: 'ghcr.io/siderolabs/kubelet:v1.35.2', apiServer: undefined, controllerManager: undefined, scheduler: undefined, proxy: undefined });
  });

  it('configImages finds the v1alpha1 document of a multi-document config', () => {
    const multi = `apiVersion: v1alpha1\nkind: HostnameConfig\nhostname: x\n---\n${cp}`;
    assert.equal(configImages(multi).scheduler, 'registry.k8s.io/kube-scheduler:v1.35.2');
  });

  it('imageChanges lists exactly the moved images, in config order', () => {
    const next = cp.replace('kube-scheduler:v1.35.2', 'kube-scheduler:v1.36.3').replace('kubelet:v1.35.2', 'kubelet:v1.36.3');
    assert.deepEqual(imageChanges(cp, next), [
      { path: 'machine.kubelet.image', from: 'ghcr.io/siderolabs/kubelet:v1.35.2', to: 'ghcr.io/siderolabs/kubelet:v1.36.3' },
      { path: 'cluster.scheduler.image', from: 'registry.k8s.io/kube-scheduler:v1.35.2', to: 'registry.k8s.io/kube-scheduler:v1.36.3' },
    ]);
    assert.deepEqual(imageChanges(cp, cp), []);
  });
});
