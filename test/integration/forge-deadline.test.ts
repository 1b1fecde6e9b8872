// A forge that accepts the connection and never answers: each adapter gives up at the call's
// deadline and says so (Transient `Timeout`), instead of calling the forge unreachable.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { GiteaForge } from '../../controller/forge/gitea.js';
import { GitHubForge } from '../../controller/forge/github.js';
import { isOutcomeError, OutcomeKind } from '../../controller/runtime/outcome.js';
import { testContext } from '../support/op-context.js';

describe('forge adapters: a forge that never answers', function () {
  let server: Server;
  let url: string;
  let received = 0;

  before(async function () {
    // Holds every request open; the client's deadline must end it.
    server = createServer(() => {
      received++;
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${String((server.address() as AddressInfo).port)}`;
  });
  after(async function () {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  const adapters = [
    {
      name: 'GitHub',
      forge: () =>
        new GitHubForge({
          apiUrl: url,
          owner: 'acme',
          repo: 'plans',
          token: () => Promise.resolve('t'),
          tokenSource: '/etc/token',
          retries: 0,
        }),
    },
    {
      name: 'Gitea',
      forge: () =>
        new GiteaForge({
          apiUrl: `${url}/api/v1`,
          owner: 'acme',
          repo: 'plans',
          token: () => Promise.resolve('t'),
          tokenSource: '/etc/token',
        }),
    },
  ];
  for (const a of adapters) {
    it(`${a.name}: Transient Timeout at the call's deadline, naming the call`, async function () {
      const before = received;
      const err = await a
        .forge()
        .pullRequestsFor(testContext({ timeoutMs: 500 }), 'kangal-patch/lab/report/x')
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      assert.ok(isOutcomeError(err), String(err));
      assert.deepEqual([err.kind, err.reason], [OutcomeKind.Transient, 'Timeout'], err.message);
      assert.match(err.message, /did not answer before the deadline/);
      assert.ok(received > before, 'the request reached the server');
    });
  }
});
