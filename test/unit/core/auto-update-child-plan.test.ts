// The proposal file (controller/core/auto-update/child-plan.ts): the template's document, comments
// and key order kept, autoUpdate removed, talosVersion set, valid under `kangal-patch validate`.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { main } from '../../../controller/cli.js';
import { childPlanDocument, TEMPLATE_LABEL } from '../../../controller/core/auto-update/child-plan.js';
import { childPlanName } from '../../../controller/core/names.js';

const TEMPLATE = `# Production follows upstream Talos patch releases; each one is proposed as a pull request.
apiVersion: kangalpatch.ozalp.dk/v1alpha1
kind: PatchPlan
metadata:
  name: prod   # the template
spec:
  target:
    source: factory
    installer: nocloud   # our machines boot nocloud images
    # follow upstream releases
    autoUpdate:
      enabled: true
      allow: patch
      minReleaseAge: 72h
  nodeSelector:
    matchLabels:
      environment: production
  groups:
    workers:
      concurrency: 2   # two at a time
  strategy:
    order: [controlPlane, workers]
  talosConfig:
    secretRef:
      name: talos-credentials
`;

const errorText = (r: unknown): string => (r instanceof Error ? r.message : 'no error');

async function validate(text: string): Promise<{ code: number; out: string; err: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'kp-child-'));
  try {
    writeFileSync(join(dir, 'child.yaml'), text);
    let out = '';
    let err = '';
    const code = await main(['validate', join(dir, 'child.yaml')], { out: (t) => (out += t), err: (t) => (err += t) });
    return { code, out, err };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('core/auto-update: childPlanDocument', function () {
  it('writes the template with autoUpdate removed and talosVersion set, comments and order kept, and it validates', async function () {
    const child = childPlanDocument(TEMPLATE, 'prod', 'v1.13.3');
    assert.ok(!(child instanceof Error), errorText(child));
    assert.equal(child.name, 'prod-v1-13-3');
    assert.equal(child.fileName, 'prod-v1-13-3.yaml');
    assert.equal(
      child.text,
      TEMPLATE.replace(
        '  name: prod   # the template\n',
        `  name: prod-v1-13-3 # the template\n  labels:\n    ${TEMPLATE_LABEL}: prod\n`,
      )
        .replace('  target:\n    source: factory', '  target:\n    talosVersion: "v1.13.3"\n    source: factory')
        .replace(/ {4}# follow upstream releases\n {4}autoUpdate:\n(?: {6}.*\n){3}/, '')
        .replace(/ {3}#/g, ' #'), // the one change yaml makes: a single space before a trailing comment
    );
    const v = await validate(child.text);
    assert.equal(v.code, 0, v.out + v.err);
    const doc = parse(child.text) as { spec: { target: Record<string, unknown> } };
    assert.deepEqual(Object.keys(doc.spec.target), ['talosVersion', 'source', 'installer']);
  });

  it('the template itself is valid, the child is a different plan, only the template document of a multi-document file is used', async function () {
    assert.equal((await validate(TEMPLATE)).code, 0);
    const other = TEMPLATE.replace('name: prod   # the template', 'name: staging');
    const child = childPlanDocument(`${other}---\n${TEMPLATE}`, 'prod', 'v1.14.0');
    assert.ok(!(child instanceof Error));
    assert.equal(child.name, 'prod-v1-14-0');
    assert.ok(!child.text.includes('staging'));
    assert.equal((await validate(child.text)).code, 0);
  });

  it('names stay valid plan names: dots as dashes, long names shortened with a hash', function () {
    assert.equal(childPlanName('prod', 'v1.13.3'), 'prod-v1-13-3');
    const long = childPlanName('a'.repeat(60), 'v1.13.3');
    assert.ok(long.length <= 63 && /^[a-z0-9-]+$/.test(long), long);
    assert.notEqual(childPlanName('a'.repeat(60), 'v1.13.4'), long);
  });

  it('a file without the template says so', function () {
    assert.match(errorText(childPlanDocument(TEMPLATE, 'nope', 'v1.13.3')), /no PatchPlan named nope/);
    assert.match(
      errorText(childPlanDocument('kind: PatchPlan\nmetadata: {name: x}\nspec: {}\n', 'x', 'v1.13.3')),
      /no spec.target mapping/,
    );
  });
});
