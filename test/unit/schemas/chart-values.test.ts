// The chart's values schema (schemas/chart-values.ts) agrees with what it configures: the controller's
// flags and their defaults, the kustomize Deployment it mirrors, and the image version.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { RUN_FLAGS, runConfigSchema } from '../../../controller/config.js';
import { LOG_LEVELS } from '../../../controller/telemetry/logger.js';
import { CHART_FORGES, CHART_LOG_LEVELS, chartValues } from '../../../schemas/chart-values.js';
import { manifestFiles, repoRoot } from '../../support/manifests.js';

describe('schemas: Helm chart values', function () {
  const defaults = chartValues.parse({});

  it('appVersion is "v" + package.json version, the tag kustomize/manager installs', function () {
    const chart = parse(readFileSync(join(repoRoot, 'charts/kangal-patch/Chart.yaml'), 'utf8')) as {
      appVersion: string;
    };
    const pkg = JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as { version: string };
    const kustomization = parse(readFileSync(join(repoRoot, 'kustomize/manager/kustomization.yaml'), 'utf8')) as {
      images: { newName: string; newTag: string }[];
    };
    assert.equal(chart.appVersion, `v${pkg.version}`);
    assert.equal(kustomization.images[0]?.newTag, chart.appVersion);
    assert.equal(kustomization.images[0]?.newName, defaults.image.repository);
  });

  it('a webhook secret is empty or at least 16 characters, as the controller requires', function () {
    assert.equal(chartValues.safeParse({ gitCredentials: { webhookSecret: 'x'.repeat(15) } }).success, false);
    assert.equal(chartValues.safeParse({ gitCredentials: { webhookSecret: 'x'.repeat(16) } }).success, true);
    assert.equal(defaults.gitCredentials.webhookSecret, '');
  });

  it("log levels and forges are the controller's", function () {
    assert.deepEqual([...CHART_LOG_LEVELS], [...LOG_LEVELS]);
    assert.deepEqual([...CHART_FORGES], runConfigSchema.shape.forge.options);
  });

  it("the defaults are the controller flags' defaults", function () {
    const d = (flag: keyof typeof RUN_FLAGS): string | undefined => RUN_FLAGS[flag].default;
    assert.equal(`:${defaults.metrics.port}`, d('metricsBindAddress'));
    assert.equal(`:${defaults.healthProbe.port}`, d('healthProbeBindAddress'));
    assert.equal(defaults.leaderElection.id, d('leaderElectionId'));
    assert.equal(defaults.leaderElection.leaseDuration, d('leaderElectionLeaseDuration'));
    assert.equal(defaults.leaderElection.renewDeadline, d('leaderElectionRenewDeadline'));
    assert.equal(defaults.leaderElection.retryPeriod, d('leaderElectionRetryPeriod'));
    assert.equal(defaults.logLevel, d('logLevel'));
    assert.equal(String(defaults.maxConcurrentReconciles), d('maxConcurrentReconciles'));
    assert.equal(defaults.preflightRetryPeriod, d('preflightRetryPeriod'));
    assert.equal(defaults.git.branch, d('gitBranch'));
    assert.equal(defaults.git.path, d('gitPath'));
    assert.equal(defaults.git.pollInterval, d('pollInterval'));
    assert.equal(defaults.forge.type, d('forge'));
    assert.equal(defaults.releases.apiUrl, d('releasesApiUrl'));
  });

  it("the pod defaults are kustomize/manager/deployment.yaml's", function () {
    const deployment = manifestFiles('manager')
      .map((m) => m.object)
      .find((o) => o.kind === 'Deployment');
    const spec = deployment?.['spec'] as {
      replicas: number;
      template: {
        spec: {
          securityContext: unknown;
          terminationGracePeriodSeconds: number;
          containers: { resources: unknown; securityContext: unknown }[];
        };
      };
    };
    const pod = spec.template.spec;
    assert.equal(defaults.replicas, spec.replicas);
    assert.equal(defaults.terminationGracePeriodSeconds, pod.terminationGracePeriodSeconds);
    assert.deepEqual(defaults.podSecurityContext, pod.securityContext);
    assert.deepEqual(defaults.securityContext, pod.containers[0]?.securityContext);
    assert.deepEqual(defaults.resources, pod.containers[0]?.resources);
  });

  it('refuses unknown keys and wrong types, naming them', function () {
    const r = chartValues.safeParse({ imag: {}, replicas: 'two', git: { url: 'ftp://example.com/x' } });
    assert.ok(!r.success);
    const paths = r.error.issues.map((i) => i.path.join('.'));
    for (const p of ['replicas', 'git.url']) assert.ok(paths.includes(p), `${p} in ${paths.join(', ')}`);
    assert.match(JSON.stringify(r.error.issues), /imag/);
  });
});
