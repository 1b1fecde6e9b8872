// Issue 19: the controller's Node watch goes silent with its connection open (half-open: a NAT or
// load balancer dropped the connection's state, no FIN, no bookmark), so its cache never sees the
// node come back from its reboot. The watchdog would notice only after the watch's server timeout
// plus 30 s (5.5-10.5 min); rebootTimeout passes first. The job must confirm with a fresh read of
// the Node before failing it (chaos seed 3045 failed a node Ready for ~28 s), and the stale node
// cache is re-listed. The oracle is the lab: the independent observer's own watches and the
// interposer's record of the controller's requests.
import assert from 'node:assert/strict';
import { startJobLab, type Controller, type JobLab } from './support/job-lab.js';
import { waitFor } from '../lab/wait.js';

const NODE = 'worker-1';
const isNodeWatch = (path: string): boolean => path.startsWith('/api/v1/nodes?') && /[?&]watch=true\b/.test(path);
const isNodeList = (path: string): boolean => path.startsWith('/api/v1/nodes?') && !/[?&]watch=/.test(path);

describe('PatchJob end to end: a silent Node watch (half-open) does not fail a node that came back', function () {
  this.timeout(120_000);
  let lab: JobLab;
  let controller: Controller;

  before(async function () {
    lab = await startJobLab({ fleet: { nodes: 3, controlPlanes: 1, talosVersion: 'v1.12.4' }, interposer: true });
    controller = lab.startController();
  });
  after(async function () {
    await lab?.stop();
  });

  /** Makes the controller's Node watch half-open as soon as one is open (again after a re-list); returns where the interposer's record stood. */
  async function silenceNodeWatch(): Promise<number> {
    const interposer = lab.interposer;
    assert.ok(interposer);
    await waitFor(() => interposer.silenceWatches(isNodeWatch) === 1 || undefined, {
      timeoutMs: 60_000,
      description: "the controller's Node watch, made silent",
    });
    return interposer.exchanges.length;
  }

  it('completes the job on a fresh read of the Node at rebootTimeout, uncordons the node and re-lists the node cache', async function () {
    const interposer = lab.interposer;
    assert.ok(interposer);
    const silencedAt = await silenceNodeWatch();
    const initialBoot = lab.observer.node(NODE)?.bootID;

    const job = await lab.createJob({
      plan: 'stale',
      node: NODE,
      target: { talosVersion: 'v1.13.2' },
      spec: { rebootTimeout: '8s' },
    });
    const status = await lab.waitForPhase(job, ['Completed', 'Failed'], 60_000);
    assert.equal(status.phase, 'Completed', `not failed on the stale cache: ${JSON.stringify(status)}`);
    assert.equal(status.reason, 'Upgraded');
    await waitFor(
      () =>
        (lab.observer.node(NODE)?.unschedulable === false && !lab.observer.liveLeases().includes('stale-workers-0')) ||
        undefined,
      {
        timeoutMs: 20_000,
        description: `${NODE} uncordoned and its slot Lease released`,
      },
    );

    // What really happened, from the observer: one reboot, back Ready on the target, uncordoned after.
    const seen = lab.observer.of(NODE);
    const down = seen.find((e) => e.kind === 'notReady');
    assert.ok(down, 'the node went down');
    const back = seen.find((e) => e.kind === 'ready' && e.detail.includes('v1.13.2') && e.at > down.at);
    assert.ok(back, 'the node came back Ready on the target');
    assert.equal(seen.filter((e) => e.kind === 'booted').length, 1, 'one boot');
    assert.notEqual(lab.observer.node(NODE)?.bootID, initialBoot);
    assert.equal(lab.observer.node(NODE)?.cordonedBy, undefined);
    assert.ok(
      seen.some((e) => e.kind === 'uncordoned' && e.at >= back.at),
      'uncordoned after it was back',
    );

    // How: a fresh GET of the Node, then the node cache re-listed (the silent watch abandoned), with a warning naming the node.
    const after = interposer.exchanges.slice(silencedAt);
    assert.ok(
      after.some((e) => e.method === 'GET' && e.path.startsWith(`/api/v1/nodes/${NODE}`)),
      `a fresh GET of the Node: ${JSON.stringify(after.map((e) => `${e.method} ${e.path}`))}`,
    );
    await waitFor(
      () =>
        interposer.exchanges
          .slice(silencedAt)
          .some((e) => e.method === 'GET' && isNodeList(e.path) && e.status === 200) || undefined,
      {
        timeoutMs: 20_000,
        description: 'the node cache re-listed',
      },
    );
    const warning = controller.logs().find((l) => l['level'] === 40 && l['resource'] === `node/${NODE}`);
    assert.ok(warning, 'a warning naming the stale node');
    assert.match(String(warning['msg']), /nodes cache is stale/);
  });

  it('never fails the node while the confirming read fails: it waits (ConfirmingNode), retries, and completes once the Node can be read', async function () {
    const interposer = lab.interposer;
    assert.ok(interposer);
    const node = 'worker-2';
    const nodePath = `/api/v1/nodes/${node}`;
    await silenceNodeWatch();
    let refusing = true;
    interposer.setBeforeForward((req) =>
      refusing && req.method === 'GET' && req.path.split('?')[0] === nodePath
        ? { status: 503, message: 'injected: apiserver unavailable' }
        : undefined,
    );
    try {
      const job = await lab.createJob({
        plan: 'unreadable',
        node,
        target: { talosVersion: 'v1.13.2' },
        spec: { rebootTimeout: '8s' },
      });
      const refused = (): number =>
        interposer.exchanges.filter((e) => e.method === 'GET' && e.path.split('?')[0] === nodePath && e.status === 503)
          .length;
      // Past the deadline, the reads fail again and again (with backoff): the job says why it waits and is not failed.
      await waitFor(() => refused() >= 3 || undefined, {
        timeoutMs: 60_000,
        description: `three refused reads of ${node}`,
      });
      const waiting = (await lab.job(job))?.status;
      assert.equal(waiting?.phase, 'Rebooting', JSON.stringify(waiting));
      assert.equal(waiting?.reason, 'ConfirmingNode');
      assert.ok(Date.parse(String(waiting?.deadline)) <= Date.now(), 'the deadline had passed');
      assert.match(String(waiting?.message), /confirming the node before failing it.*injected: apiserver unavailable/);
      refusing = false;
      const status = await lab.waitForPhase(job, ['Completed', 'Failed'], 60_000);
      assert.equal(status.phase, 'Completed', JSON.stringify(status));
      assert.equal(status.reason, 'Upgraded');
    } finally {
      interposer.setBeforeForward(undefined);
    }
    await waitFor(() => lab.observer.node(node)?.unschedulable === false || undefined, {
      timeoutMs: 20_000,
      description: `${node} uncordoned`,
    });
  });
});
