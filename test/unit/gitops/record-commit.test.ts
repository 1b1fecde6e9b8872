// The record of a pushed commit (gitops/write/guard.ts recordCommit) follows the push even when the
// pass that pushed is being cancelled: a handover mid-pass must not leave the commit unrecorded, or
// the next leader takes it for a human edit of the report and stops updating it.
import assert from 'node:assert/strict';
import { recordCommit, type BranchGuard } from '../../../controller/gitops/write/guard.js';
import type { ForgePort } from '../../../controller/forge/port.js';
import { rootContext, type OpContext } from '../../../controller/runtime/context.js';
import { systemClock } from '../../../controller/runtime/clock.js';

describe('gitops/write: recordCommit', function () {
  it('writes the status with a live signal and its own deadline when the pass was cancelled', async function () {
    const seen: { ctx: OpContext; sha: string; state: string }[] = [];
    const forge = {
      kind: 'github',
      setCommitStatus: (ctx: OpContext, sha: string, s: { state: string }) => {
        seen.push({ ctx, sha, state: s.state });
        return Promise.resolve();
      },
    } as unknown as ForgePort;
    const guard: BranchGuard = { forge, context: 'kangal-patch/lab/report', what: 'rollout report' };
    const pass = new AbortController();
    const ctx = rootContext(systemClock, pass.signal, 60_000);
    pass.abort(new Error('handed over'));
    const before = Date.now();
    await recordCommit(ctx, guard, 'a'.repeat(40));
    assert.equal(seen.length, 1);
    assert.equal(seen[0]?.sha, 'a'.repeat(40));
    assert.equal(seen[0]?.state, 'pending');
    assert.equal(seen[0]?.ctx.signal.aborted, false, 'not cancelled with the pass');
    const deadline = seen[0]?.ctx.deadline ?? 0;
    assert.ok(deadline <= Date.now() + 15_000 && deadline >= before + 15_000, 'bounded by its own 15 s');
  });

  it('writes nothing with the none forge', async function () {
    let calls = 0;
    const forge = {
      kind: 'none',
      setCommitStatus: () => {
        calls++;
        return Promise.resolve();
      },
    } as unknown as ForgePort;
    await recordCommit(
      rootContext(systemClock, new AbortController().signal),
      { forge, context: 'c', what: 'w' },
      'b'.repeat(40),
    );
    assert.equal(calls, 0);
  });
});
