// The controller's runtime environment has one source, test/lab/image-env.ts, which the benches, the
// soak and chaos runs and the container test start the controller with. What ships must be that:
// the Dockerfile's ENV in the final stage, the heap settings the Helm chart renders by default and
// the ones kustomize's Deployment sets, each with the memory limit the heap is a share of. And the
// way the lab resolves the heap percentage outside a container must give the heap Node itself gives.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { totalmem } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { chartValues } from '../../../schemas/chart-values.js';
import {
  DEFAULT_MEMORY_LIMIT_MIB,
  HEAP_PERCENT_OF_MEMORY_LIMIT,
  IMAGE_ENV,
  IMAGE_NODE_OPTIONS,
  controllerEnv,
  heapNodeOptions,
  nodeOptionsAtLimit,
} from '../../lab/image-env.js';
import { manifestFiles, repoRoot } from '../../support/manifests.js';

interface EnvVar {
  name: string;
  value?: string;
}
interface Container {
  name: string;
  env: EnvVar[];
  resources: { limits?: Record<string, string> };
}

/** `ENV` of the Dockerfile's final stage (continuation lines joined, comments dropped), `K=V` and `K="V"` pairs. */
function finalStageEnv(dockerfile: string): Record<string, string> {
  const lines = dockerfile
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'));
  const final = lines.slice(lines.findLastIndex((l) => /^FROM\s/i.test(l)) + 1);
  const env: Record<string, string> = {};
  for (const line of final.filter((l) => /^ENV\s/i.test(l))) {
    const pairs = line.replace(/^ENV\s+/i, '');
    const pair = /([A-Za-z_][A-Za-z0-9_]*)=("([^"]*)"|(\S*))\s*/gy;
    let consumed = 0;
    for (let m = pair.exec(pairs); m; m = pair.exec(pairs)) {
      env[m[1] as string] = m[3] ?? m[4] ?? '';
      consumed = pair.lastIndex;
    }
    assert.equal(consumed, pairs.length, `ENV in K=V form only: ${line}`);
  }
  return env;
}

/** The heap limit V8 reports for NODE_OPTIONS=`nodeOptions` on this Node, MiB. */
function heapLimitMiB(nodeOptions: string): number {
  const r = spawnSync(
    process.execPath,
    ['-e', 'process.stdout.write(String(require("node:v8").getHeapStatistics().heap_size_limit))'],
    { env: { ...process.env, NODE_OPTIONS: nodeOptions }, encoding: 'utf8' },
  );
  assert.equal(r.status, 0, `node ${process.version} with NODE_OPTIONS=${nodeOptions}: ${r.stderr}`);
  return Number(r.stdout) / 2 ** 20;
}

describe("the controller's runtime environment (test/lab/image-env.ts) is what ships", function () {
  const limit = `${DEFAULT_MEMORY_LIMIT_MIB}Mi`;

  it("the Dockerfile's final stage sets exactly IMAGE_ENV", function () {
    assert.deepEqual(finalStageEnv(readFileSync(join(repoRoot, 'Dockerfile'), 'utf8')), IMAGE_ENV);
    assert.equal(
      IMAGE_ENV['NODE_OPTIONS'],
      `--max-old-space-size-percentage=${HEAP_PERCENT_OF_MEMORY_LIMIT} --max-semi-space-size=4`,
    );
  });

  it("kustomize's Deployment sets the same NODE_OPTIONS, with the memory limit the heap is a share of", function () {
    const deployment = manifestFiles('manager')
      .map((m) => m.object)
      .find((o) => o.kind === 'Deployment');
    const container = (deployment?.['spec'] as { template: { spec: { containers: Container[] } } }).template.spec
      .containers[0];
    assert.ok(container);
    assert.equal(container.env.find((e) => e.name === 'NODE_OPTIONS')?.value, IMAGE_NODE_OPTIONS);
    assert.equal(container.resources.limits?.['memory'], limit);
  });

  it('the chart renders the same NODE_OPTIONS by default, with the same memory limit', function () {
    const defaults = chartValues.parse({});
    assert.equal(defaults.heapPercentOfMemoryLimit, HEAP_PERCENT_OF_MEMORY_LIMIT);
    assert.equal((defaults.resources['limits'] as Record<string, string> | undefined)?.['memory'], limit);
    const values = parse(readFileSync(join(repoRoot, 'charts/kangal-patch/values.yaml'), 'utf8')) as {
      heapPercentOfMemoryLimit: number;
    };
    assert.equal(values.heapPercentOfMemoryLimit, HEAP_PERCENT_OF_MEMORY_LIMIT, 'values.yaml (npm run generate)');
    // The template's one NODE_OPTIONS entry, its value rendered with the default (the integration
    // test renders the whole chart with Helm and checks the same).
    const template = readFileSync(join(repoRoot, 'charts/kangal-patch/templates/deployment.yaml'), 'utf8');
    const entries = [...template.matchAll(/- name: NODE_OPTIONS\n\s+value: "([^"\n]*)"/g)];
    assert.equal(entries.length, 1, "one NODE_OPTIONS in the chart's Deployment");
    const rendered = (entries[0]?.[1] ?? '').replace(
      /\{\{-? *\.Values\.heapPercentOfMemoryLimit *-?\}\}/g,
      String(defaults.heapPercentOfMemoryLimit),
    );
    assert.equal(rendered, IMAGE_NODE_OPTIONS);
    assert.equal(
      (entries[0]?.[1] ?? '').replace(/\{\{-? *\.Values\.heapPercentOfMemoryLimit *-?\}\}/g, '40'),
      heapNodeOptions(40),
    );
  });

  it('outside a container the lab resolves the percentage for the limit: the heap Node gives in a pod with that limit', function () {
    assert.deepEqual(controllerEnv(), {
      ...IMAGE_ENV,
      NODE_OPTIONS: '--max-old-space-size=128 --max-semi-space-size=4',
    });
    assert.equal(
      controllerEnv({ memoryLimitMiB: 1024 })['NODE_OPTIONS'],
      '--max-old-space-size=256 --max-semi-space-size=4',
    );
    assert.equal(controllerEnv({ nodeOptions: '' })['NODE_OPTIONS'], '');
    // This Node takes the flag in NODE_OPTIONS and resolves it as the lab does, floor(MiB × P / 100)
    // of the memory it sees: the cgroup's limit where one is below the machine's memory, else that.
    const constrained = process.constrainedMemory();
    const seenMiB = Math.min(constrained > 0 ? constrained : Infinity, totalmem()) / 2 ** 20;
    assert.equal(heapLimitMiB(IMAGE_NODE_OPTIONS), heapLimitMiB(nodeOptionsAtLimit(IMAGE_NODE_OPTIONS, seenMiB)));
  });
});
