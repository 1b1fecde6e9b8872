// Promotion evidence (controller/gitops/promotion): reports signed by one cluster's key verify with
// its public key and nothing else; a changed, moved, unsigned or foreign-signed report is rejected
// with its reason; the proposal body's evidence section links each report at its commit.
import assert from 'node:assert/strict';
import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { autoUpdateSpec, promotionSpec } from '../../../schemas/target.js';
import { promotionGate } from '../../../controller/gitops/promotion/gate.js';
import { isOutcomeError } from '../../../controller/runtime/outcome.js';
import { versionVerdict } from '../../../controller/core/promotion/decide.js';
import { evidenceSection } from '../../../controller/gitops/promotion/body.js';
import { upstreamEvidence } from '../../../controller/gitops/promotion/reports.js';
import { nextReportIndex, type ReportIndex } from '../../../controller/core/promotion/report-index.js';
import { renderReportIndex, reportIndexFiles, sha256 } from '../../../controller/gitops/promotion/report-index.js';
import {
  loadSigningKey,
  loadTrustedKeys,
  reportSigner,
  signaturePath,
  verifyReport,
} from '../../../controller/gitops/promotion/signature.js';

const ed = (): { privateKey: KeyObject; publicKey: KeyObject } => generateKeyPairSync('ed25519');
const staging = ed();
const intruder = ed();
const keys = new Map([['staging', [staging.publicKey]]]);

const reportYaml = (plan: string, more: Record<string, unknown> = {}): string =>
  `# Written by KangalPatch\n${stringify({
    apiVersion: 'kangalpatch.ozalp.dk/v1alpha1',
    kind: 'RolloutReport',
    cluster: 'staging',
    plan: { name: plan, uid: 'u1' },
    phase: 'Completed',
    reason: null,
    message: null,
    target: { talosVersion: 'v1.12.5', kubernetesVersion: null },
    startTime: '2026-12-05T10:00:00Z',
    completionTime: '2026-12-05T10:04:10Z',
    nodes: { total: 2, pending: 0, running: 0, completed: 2, failed: 0 },
    preflight: { status: 'True', reason: null, message: null },
    source: { commit: null, path: null, url: null },
    groups: [
      {
        name: 'workers',
        nodes: [
          { name: 'w1', failure: null, cordonedSeconds: 40 },
          { name: 'w2', failure: null, cordonedSeconds: 50 },
        ],
      },
    ],
    ...more,
  })}`;

const message = (v: unknown): string => (v instanceof Error ? v.message : 'no error');

function tree(files: Record<string, string>) {
  return { files: new Map(Object.entries(files)), skipped: [] };
}

/** `files` plus staging's signed index listing `listed` (default: every .yaml of files), written in that order. */
function indexed(
  files: Record<string, string>,
  listed: string[] = Object.keys(files).filter((f) => f.endsWith('.yaml')),
): Record<string, string> {
  let index: ReportIndex | undefined;
  for (const f of listed)
    index = nextReportIndex(index, 'staging', { path: f, sha256: sha256(files[f] ?? '') }) ?? index;
  if (!index) return files;
  const text = renderReportIndex(index);
  return {
    ...files,
    'status/staging/index.yaml': text,
    'status/staging/index.sig': reportSigner(staging.privateKey, 'staging').sign('status/staging/index.yaml', text),
  };
}

describe('gitops/promotion: signed reports as evidence', function () {
  const signer = reportSigner(staging.privateKey, 'staging');
  const path = 'status/staging/nodes-v1-12-5.yaml';
  const yaml = reportYaml('nodes-v1-12-5');

  it("a report signed by the cluster's key verifies; the figures are read from it", function () {
    assert.equal(verifyReport(keys, 'staging', { yamlPath: path, yaml, sigFile: signer.sign(path, yaml) }), undefined);
    const ev = upstreamEvidence(
      { commit: 'c1', tree: tree(indexed({ [path]: yaml, [signaturePath(path)]: signer.sign(path, yaml) })) },
      keys,
      new Set(['staging']),
    );
    assert.deepEqual(ev.rejected, []);
    assert.deepEqual(ev.sequences, { staging: 1 });
    const r = ev.reports[0];
    assert.deepEqual(
      [r?.plan, r?.talosVersion, r?.nodes, r?.cordonedSeconds, r?.completionTime],
      ['nodes-v1-12-5', 'v1.12.5', { total: 2, completed: 2, failed: 0 }, 90, Date.parse('2026-12-05T10:04:10Z')],
    );
  });

  it('rejected, each with its reason: unsigned, changed, signed by another key, moved to another path, unknown cluster, not a report', function () {
    const sig = signer.sign(path, yaml);
    const other = reportSigner(intruder.privateKey, 'staging');
    const cases: [string, string, string | undefined, RegExp][] = [
      [
        path,
        yaml,
        undefined,
        /no signature \(status\/staging\/nodes-v1-12-5\.sig\): not written by the controller of staging/,
      ],
      [path, yaml.replace('failed: 0\n', 'failed: 0\n# edited\n'), sig, /does not verify with cluster staging's key/],
      [path, yaml, other.sign(path, yaml), /signed with key [0-9a-f]{16}, which is not a key of cluster staging/],
      ['status/staging/other.yaml', yaml, sig, /does not verify/],
      [path, yaml, 'hello\n', /is not a KangalPatch report signature/],
    ];
    for (const [p, y, s, why] of cases)
      assert.match(verifyReport(keys, 'staging', { yamlPath: p, yaml: y, sigFile: s }) ?? 'accepted', why);
    assert.match(
      verifyReport(keys, 'lab', { yamlPath: 'status/lab/x.yaml', yaml, sigFile: sig }) ?? '',
      /no public key for cluster lab/,
    );
    const moved = 'status/staging/other.yaml';
    const ev = upstreamEvidence(
      {
        commit: 'c1',
        tree: tree(
          indexed({
            [moved]: yaml,
            [signaturePath(moved)]: signer.sign(moved, yaml),
            'status/staging/bad.yaml': 'kind: Nope\n',
            'status/staging/bad.sig': signer.sign('status/staging/bad.yaml', 'kind: Nope\n'),
          }),
        ),
      },
      keys,
      new Set(['staging']),
    );
    assert.deepEqual(ev.reports, []);
    assert.deepEqual(ev.rejected.map((r) => r.file).sort(), ['status/staging/bad.yaml', moved]);
    assert.match(
      ev.rejected.find((r) => r.file === moved)?.reason ?? '',
      /names cluster staging and plan nodes-v1-12-5, not the staging\/other its path says/,
    );
  });

  it('clusters no stage names are not read at all', function () {
    const ev = upstreamEvidence(
      { commit: 'c1', tree: tree({ 'status/lab/x.yaml': yaml }) },
      keys,
      new Set(['staging']),
    );
    assert.deepEqual([ev.reports, ev.rejected], [[], []]);
  });

  it('key files: a private key loads, a public-key folder maps <cluster>.pem, bad files are named', async function () {
    const dir = mkdtempSync(join(tmpdir(), 'kangal-keys-'));
    try {
      writeFileSync(join(dir, 'signing.pem'), staging.privateKey.export({ type: 'pkcs8', format: 'pem' }));
      writeFileSync(
        join(dir, 'rsa.pem'),
        generateKeyPairSync('rsa', { modulusLength: 1024 }).privateKey.export({ type: 'pkcs8', format: 'pem' }),
      );
      const key = await loadSigningKey(join(dir, 'signing.pem'));
      assert.ok(!(key instanceof Error) && key.asymmetricKeyType === 'ed25519');
      assert.match(
        message(await loadSigningKey(join(dir, 'rsa.pem'))),
        /holds a rsa key; report signing needs an Ed25519 private key/,
      );
      assert.match(message(await loadSigningKey(join(dir, 'missing.pem'))), /cannot read .*missing\.pem: ENOENT/);
      const pub = mkdtempSync(join(tmpdir(), 'kangal-pub-'));
      writeFileSync(join(pub, 'staging.pem'), staging.publicKey.export({ type: 'spki', format: 'pem' }));
      writeFileSync(join(pub, 'lab.pem'), 'not a key\n');
      const trusted = await loadTrustedKeys(pub);
      assert.deepEqual([...trusted.keys.keys()], ['staging']);
      assert.match(trusted.errors.join('\n'), /lab\.pem: no "-----BEGIN PUBLIC KEY-----" block/);
      rmSync(pub, { recursive: true, force: true });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('the evidence section links each report at the commit it was read from, with its figures and soak window', function () {
    const ev = upstreamEvidence(
      {
        commit: '0123456789abcdef0123',
        tree: tree(indexed({ [path]: yaml, [signaturePath(path)]: signer.sign(path, yaml) })),
      },
      keys,
      new Set(['staging']),
    );
    const spec = promotionSpec.parse({ after: [{ cluster: 'staging', template: 'nodes' }], soak: '1h' });
    const v = versionVerdict({ now: Date.parse('2026-12-06T00:00:00Z'), spec, reports: ev.reports }, 'v1.12.5');
    const text = evidenceSection(v, '1h', ev.commit, 'https://git.example/acme/plans/blob').join('\n');
    assert.match(
      text,
      /\| staging\/template nodes \| \[status\/staging\/nodes-v1-12-5\.yaml\]\(https:\/\/git\.example\/acme\/plans\/blob\/0123456789abcdef0123\/status\/staging\/nodes-v1-12-5\.yaml\) @ 0123456789ab \| 2\/2 \| 4m 10s \| 0 \| 1m 30s \| 2026-12-05T10:04:10\.000Z \| 2026-12-05T10:04:10\.000Z → 2026-12-05T11:04:10\.000Z \|/,
    );
  });

  it('the gate: no --promotion-keys-dir stalls with PromotionNotConfigured; evidence not loaded yet is transient; else versions are judged', function () {
    const spec = autoUpdateSpec.parse({
      enabled: true,
      allow: 'patch',
      promotion: { after: [{ cluster: 'staging' }], soak: '1h' },
    });
    const withPromotion = { ...spec, promotion: spec.promotion! };
    const reasonOf = (f: () => unknown): string => {
      try {
        f();
        return 'no error';
      } catch (err) {
        return isOutcomeError(err) ? `${err.kind} ${err.reason}: ${err.message}` : String(err);
      }
    };
    assert.match(
      reasonOf(() => promotionGate(undefined, { spec: withPromotion, current: 'v1.12.4', releases: [], now: 0 })),
      /^Stalled PromotionNotConfigured: .*--promotion-keys-dir/,
    );
    assert.match(
      reasonOf(() => promotionGate(() => undefined, { spec: withPromotion, current: 'v1.12.4', releases: [], now: 0 })),
      /^Transient EvidenceNotLoaded/,
    );
    const releases = ['v1.12.5', 'v1.13.0'].map((tagName) => ({
      tagName,
      draft: false,
      prerelease: false,
      publishedAt: 0,
      htmlUrl: '',
    }));
    const g = promotionGate(() => ({ commit: 'c', reports: [], rejected: [], refused: [], sequences: {} }), {
      spec: withPromotion,
      current: 'v1.12.4',
      releases,
      now: 0,
    });
    assert.deepEqual([...g.gate.entries()], [['v1.12.5', undefined]], 'only allowed steps are judged; none proven');
  });
});

describe('gitops/promotion: the signed report index binds the set of reports', function () {
  const signer = reportSigner(staging.privateKey, 'staging');
  const stagingOnly = new Set(['staging']);
  const spec = promotionSpec.parse({ after: [{ cluster: 'staging', template: 'nodes' }], soak: '1h' });
  const now = Date.parse('2026-12-08T00:00:00Z');
  const done = 'status/staging/nodes-v1-12-5.yaml';
  const doneYaml = reportYaml('nodes-v1-12-5');
  const failed = 'status/staging/nodes-v1-12-6.yaml';
  const failedYaml = reportYaml('nodes-v1-12-6', {
    phase: 'Failed',
    target: { talosVersion: 'v1.12.6', kubernetesVersion: null },
    startTime: '2026-12-06T10:00:00Z',
    completionTime: null,
    nodes: { total: 2, completed: 1, failed: 1 },
    groups: [{ name: 'workers', nodes: [{ name: 'w1', failure: 'boom', cordonedSeconds: 10 }] }],
  });
  const signed = (p: string, y: string): Record<string, string> => ({ [p]: y, [signaturePath(p)]: signer.sign(p, y) });
  const both = indexed({ ...signed(done, doneYaml), ...signed(failed, failedYaml) }, [done, failed]);
  const stageOf = (files: Record<string, string>, seen: Record<string, number> = {}) => {
    const ev = upstreamEvidence({ commit: 'c', tree: tree(files) }, keys, stagingOnly, seen);
    return { ev, stage: versionVerdict({ now, spec, reports: ev.reports, refused: ev.refused }, 'v1.12.5').stages[0] };
  };

  it('the writer: index.yaml + index.sig from the previous index of the tree, sequence up by one, nothing when unchanged', async function () {
    const repo = new Map<string, string>();
    const read = (p: string): Promise<string | undefined> => Promise.resolve(repo.get(p));
    const first = await reportIndexFiles(read, 'staging', signer, { yamlPath: done, yaml: doneYaml });
    assert.deepEqual(Object.keys(first).sort(), ['status/staging/index.sig', 'status/staging/index.yaml']);
    assert.match(
      first['status/staging/index.yaml'] ?? '',
      /kind: ReportIndex\ncluster: staging\nsequence: 1\nreports:\n {2}- path: status\/staging\/nodes-v1-12-5\.yaml\n {4}sequence: 1\n {4}sha256: [0-9a-f]{64}\n/,
    );
    for (const [p, t] of Object.entries(first)) repo.set(p, t);
    assert.deepEqual(
      await reportIndexFiles(read, 'staging', signer, { yamlPath: done, yaml: doneYaml }),
      {},
      'the same report: the index stays',
    );
    const second = await reportIndexFiles(read, 'staging', signer, { yamlPath: failed, yaml: failedYaml });
    assert.match(second['status/staging/index.yaml'] ?? '', /sequence: 2\n/);
    assert.equal(
      verifyReport(keys, 'staging', {
        yamlPath: 'status/staging/index.yaml',
        yaml: second['status/staging/index.yaml'] ?? '',
        sigFile: second['status/staging/index.sig'],
      }),
      undefined,
      'signed like a report, bound to its path',
    );
    // Someone drops the failed report's entry from the index: the writer does not sign on top of it.
    repo.set(
      'status/staging/index.yaml',
      (second['status/staging/index.yaml'] ?? '').replace(/ {2}- path: status\/staging\/nodes-v1-12-6[^]*$/, ''),
    );
    repo.set('status/staging/index.sig', second['status/staging/index.sig'] ?? '');
    await assert.rejects(
      reportIndexFiles(read, 'staging', signer, { yamlPath: done, yaml: doneYaml.replace('w1', 'w9') }),
      (err: unknown) =>
        isOutcomeError(err) &&
        err.reason === 'ReportIndexNotTrusted' &&
        /status\/staging\/index\.yaml does not verify with this controller's key/.test(err.message),
    );
  });

  it('the whole set holds: the later failure counts, the sequence is offered', function () {
    const { ev, stage } = stageOf(both, { staging: 2 });
    assert.deepEqual([ev.rejected, ev.refused, ev.sequences], [[], [], { staging: 2 }]);
    assert.equal(stage?.state, 'LaterFailure');
  });

  it("a withdrawn later failure refuses staging's evidence: the stage is EvidenceRefused, not Eligible, and says which file and sequence", function () {
    const withdrawn = Object.fromEntries(
      Object.entries(both).filter(([f]) => !f.startsWith(failed.replace('.yaml', ''))),
    );
    const { ev, stage } = stageOf(withdrawn);
    assert.equal(stage?.state, 'EvidenceRefused');
    assert.match(
      stage?.message ?? '',
      /staging\/template nodes: evidence refused: cluster staging: report status\/staging\/nodes-v1-12-6\.yaml listed at sequence 2 in status\/staging\/index\.yaml \(sequence 2\) is missing/,
    );
    assert.deepEqual([ev.reports, ev.sequences], [[], {}]);
    assert.deepEqual(
      ev.rejected.map((r) => r.file),
      ['status/staging/index.yaml'],
    );
  });

  it("a changed report refuses the cluster (even re-signed by the cluster's key)", function () {
    const edited = failedYaml.replace('boom', 'fine');
    const { stage } = stageOf({ ...both, ...signed(failed, edited) });
    assert.equal(stage?.state, 'EvidenceRefused');
    assert.match(stage?.message ?? '', /report status\/staging\/nodes-v1-12-6\.yaml listed at sequence 2 .* changed/);
  });

  it('a report not in the index is rejected, the others count', function () {
    const old = 'status/staging/nodes-v1-12-3.yaml';
    const { ev, stage } = stageOf({
      ...indexed(signed(done, doneYaml), [done]),
      ...signed(old, reportYaml('nodes-v1-12-3', { target: { talosVersion: 'v1.12.3', kubernetesVersion: null } })),
    });
    assert.deepEqual(ev.rejected, [
      {
        file: old,
        reason:
          'cluster staging: status/staging/nodes-v1-12-3.yaml is not in the signed index (status/staging/index.yaml, sequence 1)',
      },
    ]);
    assert.equal(stage?.state, 'Eligible');
    const none = stageOf(signed(done, doneYaml));
    assert.match(
      none.ev.rejected[0]?.reason ?? '',
      /is not in the signed index \(status\/staging\/index\.yaml is missing\)/,
    );
    assert.equal(none.stage?.state, 'NotRolledOut');
  });

  it('a replayed older index (with the reports it listed) is refused against the sequence seen, naming both', function () {
    const older = indexed(signed(done, doneYaml), [done]);
    const { ev, stage } = stageOf(older, { staging: 2 });
    assert.equal(stage?.state, 'EvidenceRefused');
    assert.match(
      ev.refused[0]?.reason ?? '',
      /^cluster staging: status\/staging\/index\.yaml \(sequence 1\) is older than the index already seen: sequence 2 was seen, sequence 1 is offered/,
    );
    const gone = stageOf(signed(done, doneYaml), { staging: 2 });
    assert.match(gone.stage?.message ?? '', /status\/staging\/index\.yaml is missing, but sequence 2 was seen/);
  });

  it('a gap (an index whose entries do not reach its sequence), or an index not signed by the cluster, is refused', function () {
    const text = both['status/staging/index.yaml'] ?? '';
    const gap = text.replace(/^sequence: 2$/m, 'sequence: 3');
    const { stage } = stageOf({
      ...both,
      'status/staging/index.yaml': gap,
      'status/staging/index.sig': signer.sign('status/staging/index.yaml', gap),
    });
    assert.match(
      stage?.message ?? '',
      /status\/staging\/index\.yaml \(sequence 3\) has a gap: its highest report entry is at sequence 2, not 3/,
    );
    const forged = stageOf({
      ...both,
      'status/staging/index.sig': reportSigner(intruder.privateKey, 'staging').sign('status/staging/index.yaml', text),
    });
    assert.match(
      forged.stage?.message ?? '',
      /status\/staging\/index\.yaml: signed with key [0-9a-f]{16}, which is not a key of cluster staging/,
    );
  });

  it('the gate raises the recorded sequences, never lowers them, and puts them in status', function () {
    const auto = autoUpdateSpec.parse({
      enabled: true,
      allow: 'patch',
      promotion: { after: [{ cluster: 'staging' }], soak: '1h' },
    });
    const source = (_: ReadonlySet<string>, seen: Readonly<Record<string, number>>) =>
      upstreamEvidence({ commit: 'c', tree: tree(both) }, keys, stagingOnly, seen);
    const g = promotionGate(
      source,
      { spec: { ...auto, promotion: auto.promotion! }, current: 'v1.12.4', releases: [], now },
      { staging: 1, lab: 4 },
    );
    assert.deepEqual(g.upstreamSequence, { staging: 2, lab: 4 });
    assert.deepEqual(g.outcome.status.upstreamSequence, { staging: 2, lab: 4 });
    const replayed = promotionGate(
      source,
      { spec: { ...auto, promotion: auto.promotion! }, current: 'v1.12.4', releases: [], now },
      { staging: 7 },
    );
    assert.deepEqual(replayed.upstreamSequence, { staging: 7 });
  });
});
