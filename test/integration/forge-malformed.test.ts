// Malformed answers of the forge's pull-request API, injected by the lab forge (test/lab/forge/faults.ts),
// against both forge adapters (GitHub over Octokit, Gitea over fetch): wrong JSON types, an array for
// an object, an HTML page with 200 or 502, a 20 MB body. Each is a Transient OutcomeError naming the
// operation and the endpoint (never pasting the page), the next proper answer is read as usual, and a
// pull request the forge created before garbling its answer is found again, not opened twice.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GiteaForge } from '../../controller/forge/gitea.js';
import { GitHubForge } from '../../controller/forge/github.js';
import type { ForgePort } from '../../controller/forge/port.js';
import { isOutcomeError, OutcomeKind, type OutcomeError } from '../../controller/runtime/outcome.js';
import type { ForgeFault } from '../lab/forge/faults.js';
import { startForge, type Forge } from '../lab/forge/index.js';
import { cloneWorkingCopy } from '../lab/forge/working-copy.js';
import { testCtx } from '../support/kube-fixtures.js';

const HTML = '<!DOCTYPE html><html><head><title>502 Bad Gateway</title></head><body><h1>Bad Gateway</h1></body></html>';

const esc = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

async function rejection(p: Promise<unknown>): Promise<OutcomeError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  assert.ok(isOutcomeError(err), `expected an OutcomeError, got ${String(err)}`);
  return err;
}

describe('forge adapters against malformed pull-request API answers (lab forge faults)', function () {
  this.timeout(120_000);
  let forge: Forge;
  let work: string;
  const tokenSource = '/etc/kangal-patch/git-write-token';
  const adapters: { name: string; forge: () => ForgePort; pulls: () => string; branch: string }[] = [
    {
      name: 'GitHub',
      forge: () =>
        new GitHubForge({
          apiUrl: forge.apiUrl,
          owner: 'acme',
          repo: 'plans',
          token: () => Promise.resolve(forge.token),
          tokenSource,
          retries: 0,
        }),
      pulls: () => `${forge.apiUrl}/repos/acme/plans/pulls`,
      branch: 'kangal-patch/lab/report/github-1',
    },
    {
      name: 'Gitea',
      forge: () =>
        new GiteaForge({
          apiUrl: forge.giteaApiUrl,
          owner: 'acme',
          repo: 'plans',
          token: () => Promise.resolve(forge.token),
          tokenSource,
        }),
      pulls: () => `${forge.giteaApiUrl}/repos/acme/plans/pulls`,
      branch: 'kangal-patch/lab/report/gitea-1',
    },
  ];

  before(async function () {
    forge = await startForge();
    const { cloneUrl } = await forge.createRepo('acme', 'plans', { files: { 'README.md': '# plans\n' } });
    work = await mkdtemp(join(tmpdir(), 'kangal-forge-malformed-'));
    const wc = await cloneWorkingCopy({ cloneUrl, token: forge.token, dir: join(work, 'wc') });
    await wc.write('status/report.md', '# report\n');
    await wc.git(['add', '-A']);
    await wc.git(['commit', '--quiet', '-m', 'report']);
    await wc.git(['push', '--quiet', 'origin', ...adapters.map((a) => `HEAD:refs/heads/${a.branch}`)]);
  });
  after(async function () {
    forge?.injectFault(undefined);
    await forge?.stop();
    if (work) await rm(work, { recursive: true, force: true });
  });
  afterEach(function () {
    forge.injectFault(undefined);
    assert.deepEqual(forge.violations, []);
  });

  const pullsPath = /\/repos\/acme\/plans\/pulls$/;
  const wrongTypes = JSON.stringify([
    { number: '7', html_url: 7, state: 'open', title: ['t'], head: { ref: 'x' }, base: { ref: 'main' }, labels: [] },
  ]);
  const cases: {
    name: string;
    fault: Omit<ForgeFault, 'path'>;
    reason: string;
    message: (a: (typeof adapters)[number]) => RegExp;
  }[] = [
    {
      name: 'a number or an array where a string belongs',
      fault: { status: 200, contentType: 'application/json', body: wrongTypes },
      reason: 'InvalidResponse',
      message: (a) =>
        new RegExp(
          `^list pull requests of branch \\S+: GET ${esc(a.pulls())}: the forge's answer is not a list of pull requests: .* at \\[0\\]\\.(number|html_url|title)$`,
        ),
    },
    {
      name: 'an object where a list belongs',
      fault: {
        status: 200,
        contentType: 'application/json',
        body: '{"message":"Moved Permanently","documentation_url":"https://docs.github.com"}',
      },
      reason: 'InvalidResponse',
      message: (a) =>
        new RegExp(
          `^list pull requests of branch \\S+: GET ${esc(a.pulls())}: the forge's answer is not a list of pull requests: `,
        ),
    },
    {
      name: 'an HTML page with 200',
      fault: { status: 200, contentType: 'text/html', body: HTML },
      reason: 'InvalidResponse',
      message: (a) =>
        new RegExp(
          `^list pull requests of branch \\S+: GET ${esc(a.pulls())}: the forge answered text/html \\(<!DOCTYPE html><html><head><title>502 Bad Gateway</title>.{0,3}…\\), not JSON — is the API URL right, or is a proxy answering\\?$`,
        ),
    },
    {
      name: 'an HTML page with 502',
      fault: { status: 502, contentType: 'text/html', body: HTML },
      reason: 'ForgeError',
      message: (a) =>
        new RegExp(`^list pull requests of branch \\S+: the forge answered HTTP 502 \\(GET ${esc(a.pulls())}\\)$`),
    },
    {
      name: 'a 20 MB body',
      fault: { status: 200, contentType: 'application/json', body: { bytes: 20 * 1024 * 1024 } },
      reason: 'ResponseTooLarge',
      message: (a) =>
        new RegExp(
          `^list pull requests of branch \\S+: GET ${esc(a.pulls())}: the answer is larger than 8 MiB; not read further$`,
        ),
    },
  ];

  for (const a of adapters) {
    it(`${a.name}: wrong JSON types, an object for a list, HTML with 200 or 502, a 20 MB body — each Transient, naming the endpoint; the next proper answer is read`, async function () {
      const port = a.forge();
      for (const c of cases) {
        forge.injectFault({ path: pullsPath, ...c.fault });
        const err = await rejection(port.pullRequestsFor(testCtx(), a.branch));
        assert.equal(err.kind, OutcomeKind.Transient, `${c.name}: ${err.message}`);
        assert.equal(err.reason, c.reason, `${c.name}: ${err.message}`);
        assert.match(err.message, c.message(a), c.name);
        assert.ok(!err.message.includes('<h1>'), `${c.name}: the page is not pasted into the message`);
      }
      forge.injectFault(undefined);
      assert.deepEqual(await port.pullRequestsFor(testCtx(), a.branch), []);
    });

    it(`${a.name}: the forge opens the pull request but garbles its answer — the call fails Transient, and the retry finds that one pull request instead of opening another`, async function () {
      const port = a.forge();
      const pr = { head: a.branch, base: 'main', title: `report ${a.name}`, body: 'report', draft: true };
      forge.injectFault({
        path: pullsPath,
        method: 'POST',
        afterHandling: true,
        times: 1,
        status: 200,
        contentType: 'text/html',
        body: HTML,
      });
      const err = await rejection(port.openPullRequest(testCtx(), pr));
      assert.equal(err.kind, OutcomeKind.Transient);
      assert.equal(err.reason, 'InvalidResponse');
      assert.match(
        err.message,
        new RegExp(`^open a pull request from ${esc(a.branch)}: POST ${esc(a.pulls())}: the forge answered text/html`),
      );
      // What the report writer and the proposer do on their next pass: look the branch up before opening.
      const found = await port.pullRequestsFor(testCtx(), a.branch);
      assert.deepEqual(
        found.map((p) => [p.title, p.state, p.head]),
        [[pr.title, 'open', a.branch]],
      );
      const posts = forge.requests.filter((r) => r.method === 'POST' && pullsPath.test(r.path));
      assert.equal(
        posts.filter((r) => JSON.stringify(r.body).includes(a.branch)).length,
        1,
        'one POST for this branch',
      );
    });
  }

  it('GitHub: a garbled answer to a read is retried by Octokit (idempotent) and the second answer is used', async function () {
    const retrying = new GitHubForge({
      apiUrl: forge.apiUrl,
      owner: 'acme',
      repo: 'plans',
      token: () => Promise.resolve(forge.token),
      tokenSource,
      retries: 1,
    });
    const before = forge.requests.length;
    forge.injectFault({ path: pullsPath, method: 'GET', times: 1, status: 200, contentType: 'text/html', body: HTML });
    const found = await retrying.pullRequestsFor(testCtx(), adapters[0]?.branch ?? '');
    assert.equal(found.length, 1);
    // The garbled answer never reached the API's record (the fault answers first); the retry did.
    assert.equal(forge.requests.slice(before).filter((r) => r.method === 'GET' && pullsPath.test(r.path)).length, 1);
  });
});
