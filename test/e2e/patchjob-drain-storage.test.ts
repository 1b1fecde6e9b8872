// Storage-aware drains through the real `kangal-patch run` process: drain.skipPods leaves the pods it
// selects on the node (the observer sees them stay) while the drain completes, and
// drain.waitForVolumeDetach holds the upgrade until the last VolumeAttachment naming the node is gone
// (the simulator's call record says when the upgrade came).
import assert from 'node:assert/strict';
import { StorageV1Api } from '@kubernetes/client-node';
import { startJobLab, type JobLab } from './support/job-lab.js';
import { waitFor } from '../lab/wait.js';

const NODE = 'worker-1';
const HOST = { 'kubernetes.io/hostname': NODE };

describe('PatchJob end to end: storage-aware drains', function () {
  this.timeout(180_000);
  let lab: JobLab;
  let storage: StorageV1Api;

  before(async function () {
    lab = await startJobLab({
      fleet: { nodes: 3, controlPlanes: 1, talosVersion: 'v1.12.4' },
      workloads: [
        { namespace: 'shop', name: 'web', kind: 'replicaset', replicas: 1, nodeSelector: HOST },
        // A CSI node-plugin-like pod that must stay until its volume unmounts.
        { namespace: 'storage', name: 'csi-node', kind: 'replicaset', replicas: 1, nodeSelector: HOST },
      ],
    });
    storage = lab.kc.makeApiClient(StorageV1Api);
    lab.startController();
  });
  after(async function () {
    await lab?.stop();
  });

  it('skipPods: the selected pod stays while the others are evicted; waitForVolumeDetach: the upgrade waits for the VolumeAttachment to go', async function () {
    await storage.createVolumeAttachment({
      body: {
        metadata: { name: 'csi-lab-pv-1' },
        spec: { attacher: 'lab.csi.example', nodeName: NODE, source: { persistentVolumeName: 'pv-1' } },
      },
    });
    const job = await lab.createJob({
      plan: 'storage',
      node: NODE,
      target: { talosVersion: 'v1.13.2' },
      spec: {
        drain: { skipPods: { matchLabels: { app: 'csi-node' } }, waitForVolumeDetach: true, volumeDetachTimeout: '2m' },
      },
    });
    const waiting = await waitFor(
      async () => {
        const s = (await lab.job(job))?.status;
        return s?.reason === 'WaitingForVolumeDetach' ? s : undefined;
      },
      { timeoutMs: 60_000, description: 'the drained node waits for its VolumeAttachment' },
    );
    assert.match(String(waiting.message), /1 VolumeAttachment\(s\) to detach: csi-lab-pv-1/);
    assert.ok(waiting.deadline, 'the wait carries its deadline');
    assert.equal(
      lab.talos.node(NODE).calls.filter((c) => c.method === 'MachineService.Upgrade').length,
      0,
      'no upgrade while the volume is attached',
    );

    const detachedAt = Date.now();
    await storage.deleteVolumeAttachment({ name: 'csi-lab-pv-1' });
    const status = await lab.waitForPhase(job, ['Completed', 'Failed'], 90_000);
    assert.equal(status.phase, 'Completed', JSON.stringify(status));
    const upgrade = lab.talos.node(NODE).calls.find((c) => c.method === 'MachineService.Upgrade');
    assert.ok(
      upgrade && upgrade.at >= detachedAt,
      `the upgrade came after the detach (${upgrade?.at} >= ${detachedAt})`,
    );
    assert.deepEqual(status.podsLeftBySkipPods, [
      `storage/${(await lab.fleet.workloads.podsOn(NODE)).find((p) => p.metadata?.labels?.app === 'csi-node')?.metadata?.name}`,
    ]);
    const deleted = lab.observer.of(NODE, ['podDeleting']).map((e) => e.detail);
    assert.ok(
      deleted.some((d) => d.startsWith('shop/web')),
      `web was evicted: ${JSON.stringify(deleted)}`,
    );
    assert.ok(!deleted.some((d) => d.startsWith('storage/csi-node')), `csi-node stayed: ${JSON.stringify(deleted)}`);
  });
});
