// `kangal-patch run` settings: defaults, flags over KANGAL_PATCH_ environment over defaults, and one
// message per bad value naming the flag and its variable.
import assert from 'node:assert/strict';
import { envName, resolveRunConfig } from '../../../controller/config.js';

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
    const res = resolveRunConfig({ healthProbeBindAddress: 'localhost', logLevel: 'loud' }, { KANGAL_PATCH_LEADER_ELECT: 'maybe' });
    assert.ok('errors' in res);
    assert.deepEqual(res.errors.map((e) => e.split(':')[0]), [
      '--health-probe-bind-address (KANGAL_PATCH_HEALTH_PROBE_BIND_ADDRESS)',
      '--leader-elect (KANGAL_PATCH_LEADER_ELECT)',
      '--log-level (KANGAL_PATCH_LOG_LEVEL)',
    ]);
    assert.match(res.errors[0] ?? '', /"localhost" is not an address such as ":8080"/);
  });

  it('refuses a renew deadline that is not shorter than the lease', function () {
    const res = resolveRunConfig({ leaderElectionRenewDeadline: '20s' }, {});
    assert.ok('errors' in res);
    assert.deepEqual(res.errors, ['--leader-election-renew-deadline (KANGAL_PATCH_LEADER_ELECTION_RENEW_DEADLINE): must be shorter than --leader-election-lease-duration']);
  });
});
