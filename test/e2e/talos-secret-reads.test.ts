// How often the controller reads the Talos credentials Secret, through the real `kangal-patch run`
// process and the API interposer (which records every request): a preflight of N nodes reads it
// once, not once per node; later reads come from the watch on that one Secret; and a rotated
// Secret is used by the next preflight (an expired client certificate fails it, a fresh one passes).
import assert from 'node:assert/strict';
import { CoreV1Api } from '@kubernetes/client-node';
import { OPERATOR_NAMESPACE, TALOS_SECRET, startJobLab, type JobLab } from './support/job-lab.js';
import { labPlan } from './support/plans.js';
import { waitFor } from '../lab/wait.js';

const WORKERS = 6;
const SECRET_PATH = `/api/v1/namespaces/${OPERATOR_NAMESPACE}/secrets`;
const b64 = (pem: string): string => Buffer.from(pem).toString('base64');
const POOL = { pool: 'measured' };
const LABELS = Object.fromEntries(Array.from({ length: WORKERS }, (_, i) => [`worker-${i + 1}`, POOL]));

describe('Talos Secret reads: one per preflight, then the watch; rotation picked up', function () {
  this.timeout(240_000);
  let lab: JobLab;

  before(async function () {
    // No installer image in the lab registry: every preflight fails at InstallerImages, after the
    // Talos checks ran on every node, so no PatchJob ever reads the Secret here.
    lab = await startJobLab({
      interposer: true,
      fleet: { nodes: WORKERS + 1, controlPlanes: 1, talosVersion: 'v1.12.4' },
      labels: LABELS,
      images: [],
    });
  });
  after(async function () {
    await lab?.stop();
  });

  const exchanges = () => lab.interposer?.exchanges ?? [];
  const secretGets = (from: number): number =>
    exchanges()
      .slice(from)
      .filter((e) => e.method === 'GET' && new URL(e.path, 'https://lab').pathname === `${SECRET_PATH}/${TALOS_SECRET}`)
      .length;
  const preflightMessage = (s: Record<string, unknown>): string =>
    String(
      (s.conditions as { type: string; message: string }[] | undefined)?.find((c) => c.type === 'PreflightPassed')
        ?.message ?? '',
    );
  const planDoc = (name: string) =>
    labPlan(
      { apiVersion: 'kangalpatch.ozalp.dk/v1alpha1', kind: 'PatchPlan', metadata: { name }, spec: {} },
      lab.talos.endpoint,
      {
        target: { talosVersion: 'v1.13.2' },
        groups: { measured: { selector: { matchLabels: POOL }, concurrency: 1 } },
        strategy: { order: ['measured'] },
        nodeSelector: { matchLabels: POOL },
      },
    );

  it(`reads the Secret once for a preflight of ${WORKERS} nodes, then from its watch; a rotated Secret is used by the next preflight`, async function () {
    const core = lab.kc.makeApiClient(CoreV1Api);
    const start = exchanges().length;
    // A failed preflight is retried every 3 s: the rotations below are picked up by a retry at the latest.
    lab.startController({ args: [...lab.mirrorArgs, '--preflight-retry-period', '3s'] });

    await lab.applyPlan(planDoc('first'));
    const first = await lab.waitForPlan(
      'first',
      'preflight failed at InstallerImages',
      (s) => /InstallerImages/.test(preflightMessage(s)),
      60_000,
    );
    assert.doesNotMatch(preflightMessage(first), /TalosCredentials/, 'every node answered over the Talos API');
    assert.equal(
      secretGets(start),
      1,
      `one GET of the Secret for the preflight of ${WORKERS} nodes (on main: one per node)`,
    );
    // The first read started a watch on that one Secret (list, then watch: synced before the watch request).
    await waitFor(
      () =>
        exchanges()
          .slice(start)
          .find((e) => e.method === 'GET' && e.path.startsWith(`${SECRET_PATH}?`) && e.path.includes('watch=true')),
      {
        timeoutMs: 30_000,
        description: 'the watch on the Talos Secret',
      },
    );
    const watched = exchanges().length;

    // Rotated to an expired client certificate: a preflight uses it and says so.
    const expired = lab.talos.issueClientCert('rotated-expired', { expired: true });
    await core.replaceNamespacedSecret({
      namespace: OPERATOR_NAMESPACE,
      name: TALOS_SECRET,
      body: {
        metadata: { name: TALOS_SECRET },
        data: { 'ca.crt': b64(lab.talos.caPem), 'tls.crt': b64(expired.cert), 'tls.key': b64(expired.keyTalos) },
      },
    });
    await lab.applyPlan(planDoc('second'));
    const refused = await lab.waitForPlan(
      'second',
      'preflight failed on the expired certificate',
      (s) => /TalosCredentials: .*client certificate \(tls\.crt\).*expired/.test(preflightMessage(s)),
      60_000,
    );
    assert.match(
      preflightMessage(refused),
      new RegExp(`${WORKERS} of ${WORKERS} node\\(s\\) do not answer over the Talos API`),
    );

    // Rotated to a fresh certificate: the retried preflight passes the Talos checks again.
    const fresh = lab.talos.issueClientCert('rotated-fresh');
    await core.replaceNamespacedSecret({
      namespace: OPERATOR_NAMESPACE,
      name: TALOS_SECRET,
      body: {
        metadata: { name: TALOS_SECRET },
        data: { 'ca.crt': b64(lab.talos.caPem), 'tls.crt': b64(fresh.cert), 'tls.key': b64(fresh.keyTalos) },
      },
    });
    const passed = await lab.waitForPlan(
      'second',
      'preflight retried with the fresh certificate',
      (s) => /InstallerImages/.test(preflightMessage(s)) && !/TalosCredentials/.test(preflightMessage(s)),
      60_000,
    );
    assert.doesNotMatch(preflightMessage(passed), /expired/);
    assert.equal(secretGets(watched), 0, 'once the watch ran, no preflight GETs the Secret');
  });
});
