// The committed CRDs and JSON Schema must be exactly what `npm run generate` produces now.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { renderChart } from '../../../schemas/chart.js';
import { renderGenerated } from '../../../schemas/crd.js';

type Json = Record<string, unknown>;

/** Every object schema node in an OpenAPI tree, with its path. */
function* nodes(schema: unknown, path = ''): Generator<[string, Json]> {
  if (typeof schema !== 'object' || schema === null) return;
  const s = schema as Json;
  yield [path, s];
  for (const [k, v] of Object.entries((s.properties as Json | undefined) ?? {})) yield* nodes(v, `${path}.${k}`);
  if (s.items) yield* nodes(s.items, `${path}[]`);
  if (typeof s.additionalProperties === 'object') yield* nodes(s.additionalProperties, `${path}{}`);
}

describe('schemas: generated files', function () {
  const generated = renderGenerated();

  const chart = renderChart((path) => readFileSync(path, 'utf8'));
  for (const [path, content] of Object.entries({ ...generated, ...chart })) {
    it(`${path} is up to date (run npm run generate)`, function () {
      assert.equal(readFileSync(path, 'utf8'), content);
    });
  }

  for (const file of ['kangalpatch.ozalp.dk_patchplans.yaml', 'kangalpatch.ozalp.dk_patchjobs.yaml']) {
    it(`${file} is structural: every node typed, no additionalProperties beside properties, no refs`, function () {
      const crd = parse(generated[`kustomize/crd/${file}`] ?? '') as {
        spec: { versions: { schema: { openAPIV3Schema: Json } }[] };
      };
      const root = crd.spec.versions[0]?.schema.openAPIV3Schema;
      for (const [path, node] of nodes(root)) {
        assert.ok(typeof node.type === 'string', `${path || '(root)'} has a type`);
        assert.ok(
          !(node.properties && 'additionalProperties' in node),
          `${path}: properties with additionalProperties`,
        );
        for (const banned of ['$ref', 'anyOf', 'oneOf', 'allOf', 'propertyNames', 'definitions']) {
          assert.ok(!(banned in node), `${path}: ${banned}`);
        }
      }
    });
  }

  it('has the printer columns, scope, short names and status subresource of the issue', function () {
    const columns = (file: string) => {
      const crd = parse(generated[`kustomize/crd/${file}`] ?? '') as {
        spec: {
          scope: string;
          names: { shortNames: string[] };
          versions: { subresources: Json; additionalPrinterColumns: { name: string }[] }[];
        };
      };
      const v = crd.spec.versions[0];
      assert.equal(crd.spec.scope, 'Cluster');
      assert.ok(crd.spec.names.shortNames.length > 0);
      assert.deepEqual(v?.subresources, { status: {} });
      return v?.additionalPrinterColumns.map((c) => c.name.toUpperCase());
    };
    assert.deepEqual(columns('kangalpatch.ozalp.dk_patchplans.yaml'), [
      'PHASE',
      'TALOSTARGET',
      'K8STARGET',
      'TOTAL',
      'RUNNING',
      'COMPLETED',
      'FAILED',
      'AGE',
    ]);
    assert.deepEqual(columns('kangalpatch.ozalp.dk_patchjobs.yaml'), [
      'NODE',
      'PLAN',
      'GROUP',
      'PHASE',
      'CURRENT',
      'TARGET',
      'AGE',
    ]);
  });
});
