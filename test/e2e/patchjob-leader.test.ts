// Leader election between two `kangal-patch run` processes: only the leader acts; when it is
// killed the standby takes over once the lease expires and finishes the job without a second
// upgrade; a SIGTERMed leader releases the lease and exits 0.
import assert from 'node:assert/strict';
import { CoordinationV1Api } from '@kubernetes/client-node';
import { OPERATOR_NAMESPACE, startJobLab, type Controller, type JobLab } from './support/job-lab.js';
import { waitFor } from '../lab/wait.js';

const LEASE_MS = 4_000;
const ELECTION = [
  '--leader-elect',
  'true',
  '--leader-election-lease-duration',
  '4s',
  '--leader-election-renew-deadline',
  '3s',
  '--leader-election-retry-period',
  '500ms',
];

const leading = (c: Controller): boolean => c.logs().some((l) => String(l.msg).startsWith('leading'));
const actedOn = (c: Controller, job: string): boolean => c.logs().some((l) => l.job === job);

describe('PatchJob end to end: leader election', function () {
  this.timeout(240_000);
  let lab: JobLab;

  before(async function () {
    lab = await startJobLab({
      fleet: { nodes: 4, controlPlanes: 1, talosVersion: 'v1.12.4' },
      timings: { upgradeMs: 300, shutdownMs: 100, rebootMs: 2_000, bootMs: 300 },
    });
  });
  after(async function () {
    await lab?.stop();
  });

  it('only the leader acts; a killed leader is replaced and the job finishes with one upgrade', async function () {
    const a = lab.startController({ name: 'replica-a', args: ELECTION });
    await waitFor(() => leading(a) || undefined, { timeoutMs: 30_000, description: 'replica-a leading' });
    const b = lab.startController({ name: 'replica-b', args: ELECTION });
    await waitFor(() => b.logs().some((l) => l.msg === 'waiting to become leader') || undefined, {
      timeoutMs: 30_000,
      description: 'replica-b standing by',
    });

    const job = await lab.createJob({ plan: 'leader', node: 'worker-1', target: { talosVersion: 'v1.13.2' } });
    await waitFor(async () => (await lab.job(job))?.status.phase === 'Rebooting' || undefined, {
      timeoutMs: 30_000,
      intervalMs: 20,
      description: 'job rebooting',
    });
    assert.equal(actedOn(b, job), false, 'the standby did nothing while replica-a led');
    assert.equal(leading(b), false);

    await a.kill();
    const killedAt = Date.now();
    await waitFor(() => leading(b) || undefined, { timeoutMs: LEASE_MS + 15_000, description: 'replica-b leading' });
    const status = await lab.waitForPhase(job, ['Completed', 'Failed'], LEASE_MS + 15_000);
    assert.equal(status.phase, 'Completed', JSON.stringify(status));
    assert.ok(Date.now() - killedAt <= LEASE_MS + 15_000, 'finished within 15 s of the lease expiring');
    assert.equal(lab.talos.node('worker-1').upgradesStarted, 1, 'no second upgrade after the handover');
    assert.equal(lab.talos.node('worker-1').reboots, 1);
    assert.equal(lab.observer.of('worker-1', ['booted']).length, 1);
    assert.equal(await b.stop(), 0, 'SIGTERM exits 0');
  });

  it('a SIGTERMed leader releases the lease at once and exits 0', async function () {
    const a = lab.startController({ name: 'replica-c', args: ELECTION });
    await waitFor(() => leading(a) || undefined, { timeoutMs: 30_000, description: 'replica-c leading' });
    const b = lab.startController({ name: 'replica-d', args: ELECTION });
    await waitFor(() => b.logs().some((l) => l.msg === 'waiting to become leader') || undefined, {
      timeoutMs: 30_000,
      description: 'replica-d standing by',
    });
    assert.equal(await a.stop(), 0);
    // Released, not left to expire: right after the exit no valid lease names replica-c.
    const lease = await lab.kc
      .makeApiClient(CoordinationV1Api)
      .readNamespacedLease({ name: 'kangal-patch-leader', namespace: OPERATOR_NAMESPACE });
    assert.equal(
      String(lease.spec?.holderIdentity ?? '').startsWith('replica-c'),
      false,
      `holder after release: ${lease.spec?.holderIdentity ?? '(none)'}`,
    );
    await waitFor(() => leading(b) || undefined, { timeoutMs: 30_000, description: 'replica-d leading' });
    await b.stop();
  });
});
