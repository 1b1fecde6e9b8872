// `kangal-patch run` settings: defaults, flags over KANGAL_PATCH_ environment over defaults, and one
// message per bad value naming the flag and its variable.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { main } from '../../controller/cli.js';
import { envName, resolveRunConfig } from '../../controller/config.js';

/** A made-up token, different on every run, that must never be echoed back. */
const URL_TOKEN = randomBytes(12).toString('hex');

describe('run config', function () {
  it('has the documented defaults', function () {
    const cfg = resolveRunConfig({}, {});
    assert.ok(!('errors' in cfg));
    assert.equal(cfg.namespace, 'kangal-patch');
    assert.deepEqual(cfg.metricsBindAddress, { host: '0.0.0.0', port: 8080 });
    assert.deepEqual(cfg.healthProbeBindAddress, { host: '0.0.0.0', port: 8081 });
    assert.equal(cfg.leaderElect, false);
    assert.equal(cfg.leaderElectionLeaseDuration, 15_000);
    assert.equal(cfg.logLevel, 'info');
    assert.equal(cfg.kubeconfig, undefined);
  });

  it('takes flags over environment over defaults', function () {
    assert.equal(envName('healthProbeBindAddress'), 'KANGAL_PATCH_HEALTH_PROBE_BIND_ADDRESS');
    const env = { KANGAL_PATCH_NAMESPACE: 'ops', KANGAL_PATCH_LEADER_ELECT: 'true', KANGAL_PATCH_LOG_LEVEL: 'debug' };
    const cfg = resolveRunConfig({ namespace: 'flagged', leaderElect: true, metricsBindAddress: '0' }, env);
    assert.ok(!('errors' in cfg));
    assert.equal(cfg.namespace, 'flagged');
    assert.equal(cfg.leaderElect, true);
    assert.equal(cfg.logLevel, 'debug');
    assert.equal(cfg.metricsBindAddress, undefined, '0 disables');
  });

  it('names every bad value with its flag and environment variable', function () {
    const res = resolveRunConfig(
      { healthProbeBindAddress: 'localhost', logLevel: 'loud' },
      { KANGAL_PATCH_LEADER_ELECT: 'maybe' },
    );
    assert.ok('errors' in res);
    assert.deepEqual(
      res.errors.map((e) => e.split(':')[0]),
      [
        '--health-probe-bind-address (KANGAL_PATCH_HEALTH_PROBE_BIND_ADDRESS)',
        '--leader-elect (KANGAL_PATCH_LEADER_ELECT)',
        '--log-level (KANGAL_PATCH_LOG_LEVEL)',
      ],
    );
    assert.match(res.errors[0] ?? '', /"localhost" is not an address such as ":8080"/);
  });

  it('refuses a renew deadline that is not shorter than the lease', function () {
    const res = resolveRunConfig({ leaderElectionRenewDeadline: '20s' }, {});
    assert.ok('errors' in res);
    assert.deepEqual(res.errors, [
      '--leader-election-renew-deadline (KANGAL_PATCH_LEADER_ELECTION_RENEW_DEADLINE): must be shorter than --leader-election-lease-duration',
    ]);
  });

  describe('git flags', function () {
    it('runs without Git by default and has the documented git defaults', function () {
      const cfg = resolveRunConfig({}, {});
      assert.ok(!('errors' in cfg));
      assert.equal(cfg.gitUrl, undefined);
      assert.equal(cfg.gitBranch, 'main');
      assert.equal(cfg.gitPath, 'plans');
      assert.equal(cfg.pollInterval, 60_000);
      assert.equal(cfg.forge, 'github');
      assert.equal(cfg.webhookBindAddress, undefined, 'webhook off by default');
      assert.deepEqual(cfg.gitAuthor, { name: 'kangal-patch', email: 'kangal-patch@users.noreply.local' });
      assert.equal(cfg.releasesApiUrl, 'https://api.github.com', 'auto-update reads GitHub releases by default');
      assert.equal(cfg.releasesTokenFile, undefined, 'anonymous by default');
    });

    it('takes the releases API and its token file from flags or environment', function () {
      const cfg = resolveRunConfig(
        { releasesApiUrl: 'https://ghe.example.com/api/v3/' },
        { KANGAL_PATCH_RELEASES_TOKEN_FILE: '/var/run/secrets/releases/token' },
      );
      assert.ok(!('errors' in cfg), JSON.stringify(cfg));
      assert.equal(cfg.releasesApiUrl, 'https://ghe.example.com/api/v3');
      assert.equal(cfg.releasesTokenFile, '/var/run/secrets/releases/token');
      const lab = resolveRunConfig({}, { KANGAL_PATCH_RELEASES_API_URL: 'http://127.0.0.1:3000' });
      assert.ok(
        !('errors' in lab) && lab.releasesApiUrl === 'http://127.0.0.1:3000',
        'plain HTTP to loopback (the lab forge)',
      );
    });

    it('takes a forge API over HTTPS, or plain HTTP to a loopback host, without a trailing slash', function () {
      const cfg = resolveRunConfig({ forgeApiUrl: 'https://ghe.example.com/api/v3/' }, {});
      assert.ok(!('errors' in cfg), JSON.stringify(cfg));
      assert.equal(cfg.forgeApiUrl, 'https://ghe.example.com/api/v3');
      for (const lab of ['http://127.0.0.1:3000/api/v1', 'http://localhost:3000', 'http://[::1]:3000']) {
        const res = resolveRunConfig({}, { KANGAL_PATCH_FORGE_API_URL: lab });
        assert.ok(!('errors' in res), `${lab}: ${JSON.stringify(res)}`);
      }
    });

    it('accepts HTTPS and loopback HTTP with a cluster name, from flags or environment', function () {
      const cfg = resolveRunConfig(
        { gitUrl: 'http://127.0.0.1:3000/org/plans.git', gitPath: '/fleet/plans/' },
        { KANGAL_PATCH_CLUSTER_NAME: 'prod-eu', KANGAL_PATCH_POLL_INTERVAL: '2s' },
      );
      assert.ok(!('errors' in cfg), JSON.stringify(cfg));
      assert.equal(cfg.clusterName, 'prod-eu');
      assert.equal(cfg.pollInterval, 2000);
      assert.equal(cfg.gitPath, 'fleet/plans');
      assert.ok(!('errors' in resolveRunConfig({ gitUrl: 'https://github.com/org/plans.git', clusterName: 'a' }, {})));
    });

    const rejected: [string, Record<string, string>, RegExp][] = [
      [
        'plain HTTP to a remote host',
        { gitUrl: 'http://git.example.com/plans.git', clusterName: 'a' },
        /^--git-url \(KANGAL_PATCH_GIT_URL\): plain HTTP is allowed only for loopback/,
      ],
      [
        'a token in the URL',
        { gitUrl: `https://x-access-token:${URL_TOKEN}@github.com/o/p.git`, clusterName: 'a' },
        /^--git-url .*must not contain credentials: put the token in a file and pass --git-token-file$/,
      ],
      [
        'ssh URLs',
        { gitUrl: 'ssh://git@github.com/o/p.git', clusterName: 'a' },
        /^--git-url .*must be an https:\/\/ URL/,
      ],
      [
        'a missing cluster name',
        { gitUrl: 'https://github.com/o/p.git' },
        /^--cluster-name \(KANGAL_PATCH_CLUSTER_NAME\): is required with --git-url$/,
      ],
      [
        'a cluster name that is not a DNS label',
        { gitUrl: 'https://github.com/o/p.git', clusterName: 'Prod_EU' },
        /^--cluster-name .*must be a DNS label/,
      ],
      ['a path leaving the repository', { gitPath: '../etc' }, /^--git-path .*no "\.\."/],
      ['an unknown forge', { forge: 'gitlab' }, /^--forge \(KANGAL_PATCH_FORGE\): /],
      ['a bad author', { gitAuthor: 'bot' }, /^--git-author .*"Name <email>"/],
      [
        'a webhook without a secret',
        { webhookBindAddress: ':9292' },
        /^--webhook-secret-file .*is required with --webhook-bind-address$/,
      ],
      ['a zero poll interval', { pollInterval: '0s' }, /^--poll-interval .*not a positive duration/],
      [
        'plain HTTP releases API to a remote host',
        { releasesApiUrl: 'http://api.example.com' },
        /^--releases-api-url \(KANGAL_PATCH_RELEASES_API_URL\): .*must be https:\/\//,
      ],
      [
        'a token in the releases API URL',
        { releasesApiUrl: `https://x:${URL_TOKEN}@api.github.com` },
        /^--releases-api-url .*credentials do not belong in the URL/,
      ],
      [
        'plain HTTP forge API to a remote host',
        { forgeApiUrl: 'http://git.example.com/api/v1' },
        /^--forge-api-url \(KANGAL_PATCH_FORGE_API_URL\): forge API base URL http:\/\/git\.example\.com: must be https:\/\/ \(plain http only to a loopback address\)$/,
      ],
      [
        'a token in the forge API URL',
        { forgeApiUrl: `https://x:${URL_TOKEN}@api.github.com` },
        /^--forge-api-url .*credentials do not belong in the URL/,
      ],
      [
        'a forge API that is not http(s)',
        { forgeApiUrl: 'ftp://git.example.com' },
        /^--forge-api-url .*must be https:\/\//,
      ],
    ];
    for (const [what, flags, message] of rejected) {
      it(`rejects ${what} with a message naming the flag`, function () {
        const res = resolveRunConfig(flags, {});
        assert.ok('errors' in res, `accepted ${JSON.stringify(flags)}`);
        assert.equal(res.errors.length, 1, res.errors.join('\n'));
        assert.match(res.errors[0] ?? '', message);
        assert.ok(!(res.errors[0] ?? '').includes(URL_TOKEN), 'the token is not echoed');
      });
    }
  });
  it('hooks: their own namespace by default, never the operator one; allowlists empty (only default, no token; any registry)', function () {
    const cfg = resolveRunConfig({}, {});
    assert.ok(!('errors' in cfg));
    assert.equal(cfg.hooksNamespace, 'kangal-patch-hooks');
    assert.deepEqual(cfg.hookPolicy, {
      serviceAccounts: [],
      priorityClasses: [],
      imageRegistries: [],
      controllerServiceAccount: 'kangal-patch-controller',
    });
    const same = resolveRunConfig({ namespace: 'ops', hooksNamespace: 'ops' }, {});
    assert.ok('errors' in same);
    assert.match(
      same.errors.join('\n'),
      /^--hooks-namespace \(KANGAL_PATCH_HOOKS_NAMESPACE\): must not be the operator namespace/,
    );
  });

  it("hooks: reads the allowlists (flags or environment) and refuses the controller's own ServiceAccount in them", function () {
    const cfg = resolveRunConfig(
      { hookServiceAccounts: 'ceph-noout, backup', hookImageRegistries: 'GHCR.io/acme,registry.example.com:5000' },
      { KANGAL_PATCH_HOOK_PRIORITY_CLASSES: 'batch-low', POD_SERVICE_ACCOUNT: 'prod-kangal-patch-controller' },
    );
    assert.ok(!('errors' in cfg));
    assert.deepEqual(cfg.hookPolicy, {
      serviceAccounts: ['ceph-noout', 'backup'],
      priorityClasses: ['batch-low'],
      imageRegistries: ['ghcr.io/acme', 'registry.example.com:5000'],
      controllerServiceAccount: 'prod-kangal-patch-controller',
    });
    for (const [flags, env] of [
      [{ hookServiceAccounts: 'kangal-patch-controller' }, {}],
      [
        { hookServiceAccounts: 'ok,prod-kangal-patch-controller' },
        { POD_SERVICE_ACCOUNT: 'prod-kangal-patch-controller' },
      ],
    ] as const) {
      const res = resolveRunConfig(flags, env);
      assert.ok('errors' in res);
      assert.match(
        res.errors.join('\n'),
        /^--hook-service-accounts \(KANGAL_PATCH_HOOK_SERVICE_ACCOUNTS\): .* is the controller's own ServiceAccount name/,
      );
    }
    const bad = resolveRunConfig({ hookServiceAccounts: 'Bad_Name', hookImageRegistries: 'ghcr.io/acme:latest' }, {});
    assert.ok('errors' in bad);
    assert.deepEqual(
      bad.errors.map((e) => e.split(':')[0]),
      [
        '--hook-service-accounts (KANGAL_PATCH_HOOK_SERVICE_ACCOUNTS)',
        '--hook-image-registries (KANGAL_PATCH_HOOK_IMAGE_REGISTRIES)',
      ],
    );
  });
});

describe('kangal-patch run: the webhook secret at start', function () {
  const run = async (secret: string | undefined, extra: string[] = []): Promise<{ code: number; err: string }> => {
    const dir = mkdtempSync(join(tmpdir(), 'kp-webhook-'));
    try {
      const file = join(dir, 'webhook-secret');
      if (secret !== undefined) writeFileSync(file, secret);
      let err = '';
      const code = await main(
        [
          'run',
          '--webhook-bind-address',
          '127.0.0.1:0',
          '--webhook-secret-file',
          file,
          '--kubeconfig',
          join(dir, 'none'),
          ...extra,
        ],
        { out: () => undefined, err: (t: string) => (err += t) },
      );
      return { code, err };
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  };

  for (const [what, secret, problem] of [
    ['an empty secret (the example Secret as shipped)', '', /is empty; it must be at least 16 bytes/],
    ['a 15-byte secret', 'fifteen-bytes!!\n', /is 15 bytes; it must be at least 16 bytes/],
    ['a missing file', undefined, /cannot read the webhook secret file .*: ENOENT/],
  ] as const) {
    it(`refuses ${what}, naming the flag and its variable`, async function () {
      const { code, err } = await run(secret);
      assert.equal(code, 2);
      assert.match(err, /^kangal-patch run: --webhook-secret-file \(KANGAL_PATCH_WEBHOOK_SECRET_FILE\): /);
      assert.match(err, problem);
    });
  }
});
