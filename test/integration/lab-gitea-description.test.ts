// Gitea's published OpenAPI description as the lab forge's contract: fetched into the lab cache by
// test/lab/gobuild/build.sh (quiet when cached), and the checker rejecting what it rejects.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { ForgeContract, giteaDescriptionPath, giteaVersion } from '../lab/forge/openapi.js';

const buildScript = fileURLToPath(new URL('../lab/gobuild/build.sh', import.meta.url));

function runBuild(): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile('bash', [buildScript], { maxBuffer: 16 * 1024 * 1024 }, (err, stdout, stderr) => {
      resolve({ code: err ? Number(err.code ?? 1) : 0, stdout, stderr });
    });
  });
}

describe("lab forge: Gitea's OpenAPI description", function () {
  let contract: ForgeContract;

  before(async function () {
    // A cold cache builds Kubernetes from source: minutes, not a test's business to time.
    this.timeout(60 * 60 * 1000);
    const first = await runBuild();
    assert.equal(first.code, 0, first.stderr);
    contract = await ForgeContract.load('gitea');
  });

  it('is in the lab cache after build.sh, substituted and parseable, and a second run is quiet', async function () {
    const path = await giteaDescriptionPath();
    assert.match(path, new RegExp(`/gitea/${await giteaVersion()}/openapi3\\.json$`));
    const spec = JSON.parse(await readFile(path, 'utf8')) as {
      openapi: string;
      info: { version: string };
      servers: { url: string }[];
    };
    assert.match(spec.openapi, /^3\.0\./);
    assert.equal(spec.info.version, (await giteaVersion()).replace(/^v/, ''));
    assert.deepEqual(spec.servers, [{ url: '/api/v1' }]);
    const second = await runBuild();
    assert.equal(second.code, 0);
    assert.equal(second.stderr, '', 'a warm build.sh prints nothing on stderr');
  });

  it('resolves operations relative to /api/v1 and validates responses against the components', function () {
    assert.equal(contract.basePath, '/api/v1');
    const m = contract.match('GET', '/repos/acme/plans/pulls/7');
    assert.ok(m);
    assert.equal(m.op.operationId, 'repoGetPullRequest');
    assert.deepEqual(m.pathParams, { owner: 'acme', repo: 'plans', index: '7' });
    const errors = contract.validateResponse(m.op, 200, {
      number: 'seven',
      user: { id: 'x' },
      labels: [{ id: 1.5 }],
      head: { repo: { owner: { email: 'not-an-email' } } },
    });
    assert.deepEqual(errors.sort(), [
      'response 200/head/repo/owner/email must match format "email"',
      'response 200/labels/0/id must be integer',
      'response 200/labels/0/id must match format "int64"',
      'response 200/number must be integer',
      'response 200/user/id must be integer',
    ]);
    // go-swagger marks nothing nullable; Gitea sends nil pointers as null: null reads as absent.
    assert.deepEqual(contract.validateResponse(m.op, 200, { number: 7, merged_at: null, milestone: null }), []);
    assert.deepEqual(contract.validateResponse(m.op, 200, { number: 7, merged_at: 'yesterday' }), [
      'response 200/merged_at must match format "date-time"',
    ]);
  });

  it("accepts Gitea's APIError body on error statuses and nothing else", function () {
    const m = contract.match('GET', '/repos/acme/plans/pulls/7');
    assert.ok(m);
    assert.deepEqual(
      contract.validateResponse(m.op, 404, { message: 'not found', url: 'http://127.0.0.1/api/swagger' }),
      [],
    );
    assert.equal(contract.validateResponse(m.op, 404, { error: 'not found' }).length, 2);
    assert.deepEqual(contract.validateResponse(m.op, 418, { message: 'x', url: 'y' }), [
      'repoGetPullRequest does not document status 418',
    ]);
    const merge = contract.match('POST', '/repos/acme/plans/pulls/7/merge');
    assert.ok(merge);
    assert.deepEqual(contract.validateResponse(merge.op, 200, undefined), []);
    assert.deepEqual(contract.validateResponse(merge.op, 200, { merged: true }), [
      'repoMergePullRequest documents no body for status 200',
    ]);
  });

  it("keeps its component ids apart from GitHub's, so both load in one process", async function () {
    const gh = await ForgeContract.load('github');
    const m = gh.match('GET', '/repos/acme/plans/pulls/7');
    assert.ok(m);
    assert.equal(m.op.operationId, 'pulls/get');
    assert.ok(gh.validateResponse(m.op, 200, { number: 'seven' }).length > 0);
    assert.equal(contract.match('GET', '/repos/acme/plans/pulls/7')?.op.operationId, 'repoGetPullRequest');
  });
});
