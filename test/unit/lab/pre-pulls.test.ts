// The lab's reading of pre-pulls from the Talos simulator's record (test/lab/talos/pre-pulls.ts):
// each bound it checks catches a record that breaks it.
import assert from 'node:assert/strict';
import { installerPulls, prePullViolations } from '../../lab/talos/pre-pulls.js';
import type { SimCall, SimCallMethod } from '../../lab/talos/index.js';

const IMAGE = 'ghcr.io/siderolabs/installer:v1.14.2';
let seq = 0;
/** When a call started and ended (simulator milliseconds). */
type Span = [at: number, endedAt: number];
const call = (method: SimCallMethod, node: string, [at, endedAt]: Span, effect?: string): SimCall => ({
  seq: ++seq,
  method,
  node,
  at,
  endedAt,
  peer: '',
  identity: undefined,
  phase: 'running',
  image: method === 'MachineService.Reboot' ? undefined : IMAGE,
  result: 'ok',
  ...(effect ? { effect } : {}),
});
/** One node's own upgrade: pull at `t`, install, reboot. */
const own = (node: string, t: number, effect = 'pulled'): SimCall[] => [
  call('ImageService.Pull', node, [t, t + 10], effect),
  call('LifecycleService.Upgrade', node, [t + 20, t + 30]),
  call('MachineService.Reboot', node, [t + 40, t + 41]),
];
const GROUPS = [
  { name: 'a', concurrency: 1, nodes: ['a-1', 'a-2', 'a-3'] },
  { name: 'b', concurrency: 1, nodes: ['b-1', 'b-2'] },
];

describe('lab: pre-pulls in the Talos simulator record', function () {
  it("tells a node's pre-pull from its own pull, and a record that keeps every bound has no violation", function () {
    const calls = [
      ...own('a-1', 0),
      call('ImageService.Pull', 'a-2', [25, 35], 'pulled'), // while a-1 installs
      ...own('a-2', 100, 'already present'),
      ...own('b-1', 200),
      call('ImageService.Pull', 'b-2', [225, 235], 'pulled'),
      ...own('b-2', 300, 'already present'),
    ].sort((x, y) => x.at - y.at);
    const pulls = installerPulls(calls);
    assert.deepEqual(
      pulls.map((p) => [p.node, p.prePull?.at, p.own.at]),
      [
        ['a-1', undefined, 0],
        ['a-2', 25, 100],
        ['b-1', undefined, 200],
        ['b-2', 225, 300],
      ],
    );
    assert.deepEqual(prePullViolations(calls, GROUPS), []);
  });

  it("flags more pre-pulls in flight than the concurrency, more than one round ahead, a later group's node, and a node outside the plan", function () {
    const calls = [
      ...own('a-1', 0),
      call('ImageService.Pull', 'a-2', [25, 35]),
      call('ImageService.Pull', 'a-3', [26, 36]), // two in flight, two ahead with concurrency 1
      call('ImageService.Pull', 'b-2', [27, 37]), // group b before a's nodes rebooted
      call('ImageService.Pull', 'z-9', [28, 38]), // not in the plan
      ...own('a-2', 100),
      ...own('a-3', 200),
      ...own('b-1', 300),
      ...own('b-2', 400),
    ].sort((x, y) => x.at - y.at);
    const v = prePullViolations(calls, GROUPS);
    assert.ok(
      v.some((m) => /group a: 2 pre-pulls in flight at once \(concurrency 1\)/.test(m)),
      v.join('\n'),
    );
    assert.ok(
      v.some((m) => /group a: 2 nodes pre-pulled ahead of their turn at once/.test(m)),
      v.join('\n'),
    );
    assert.ok(
      v.some((m) => /group b: b-2 pre-pulled while the earlier group's a-1, a-2, a-3 had not rebooted yet/.test(m)),
      v.join('\n'),
    );
    assert.ok(
      v.some((m) => /z-9 is in no group of the plan/.test(m)),
      v.join('\n'),
    );
  });
});
