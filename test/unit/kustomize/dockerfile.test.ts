// The image is built and run in test/e2e/container-image.test.ts (podman); these checks read the
// Dockerfile alone, in milliseconds and with no container engine: stages, base image, user, what the
// final stage copies (the bundle and the license file, no node_modules), the entry point, and that
// the production dependencies cover the compiled code (the bundle takes in whatever it imports, so
// a dev dependency imported by mistake would ship unnoticed).
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { join } from 'node:path';
import { importSpecifiers, sourceFiles } from '../../support/source-files.js';
import { repoRoot } from '../../support/manifests.js';

interface Stage {
  from: string;
  name: string | undefined;
  lines: string[];
}

/** The Dockerfile's stages with their instructions (continuation lines joined, comments dropped). */
function stages(text: string): Stage[] {
  const out: Stage[] = [];
  const lines = text
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'));
  for (const line of lines) {
    const from = /^FROM\s+(\S+)(?:\s+AS\s+(\S+))?$/i.exec(line);
    if (from) out.push({ from: from[1] ?? '', name: from[2], lines: [] });
    else out.at(-1)?.lines.push(line);
  }
  return out;
}

/** `RUN [--mount=...] npm ci`: the install, with or without a cache mount for npm's downloads. */
const NPM_CI = /^RUN (?:--mount=\S+\s+)*npm ci\b/;

/** The build stage's compile: tsc with tsconfig.build.json (what `npm run build` runs). */
const BUILD = /\btsc -p tsconfig\.build\.json\b/;
/** Then the bundle and the license texts of what it bundles. */
const BUNDLE = /\bnode bundle\.mjs\b/;
const LICENSES = /\bnode dist\/schemas\/third-party-licenses\.js > THIRD_PARTY_LICENSES\b/;

const packageName = (spec: string): string =>
  spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : (spec.split('/')[0] ?? spec);

describe('Dockerfile (static checks; no Docker engine here)', function () {
  const all = stages(readFileSync(join(repoRoot, 'Dockerfile'), 'utf8'));
  const final = all.at(-1) as Stage;
  const pkg = JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as {
    dependencies: Record<string, string>;
    devDependencies: Record<string, string>;
  };

  it('is multi-stage on one BASE, Node 24 LTS (trixie-slim) by default', function () {
    assert.ok(all.length >= 2, `${all.length} stages`);
    const text = readFileSync(join(repoRoot, 'Dockerfile'), 'utf8');
    assert.match(text, /^ARG BASE=node:24-trixie-slim$/m);
    for (const s of all) assert.equal(s.from, '${BASE}', `stage ${s.name ?? '(final)'}`);
    const build = all.find((s) => s.lines.some((l) => BUILD.test(l)));
    assert.ok(
      build?.lines.some((l) => NPM_CI.test(l) && !l.includes('--omit=dev')),
      'the build stage installs all dependencies with npm ci',
    );
  });

  it('the final stage runs as uid 65532 with the bundle and THIRD_PARTY_LICENSES only, no node_modules', function () {
    assert.ok(
      final.lines.some((l) => /^USER 65532(:65532)?$/.test(l)),
      'USER 65532',
    );
    const copies = final.lines.filter((l) => l.startsWith('COPY'));
    const build = all.find((s) => s.lines.some((l) => BUILD.test(l)));
    const run = build?.lines.find((l) => BUILD.test(l)) ?? '';
    assert.ok(
      BUNDLE.test(run) && LICENSES.test(run),
      `the build stage bundles and collects the licenses after tsc: ${run}`,
    );
    const fromBuild = copies.filter((l) => l.includes(`--from=${build?.name ?? '?'}`));
    assert.deepEqual(
      fromBuild.map((l) => l.split(/\s+/).slice(-2)).sort(),
      [
        ['/src/THIRD_PARTY_LICENSES', './THIRD_PARTY_LICENSES'],
        ['/src/dist/kangal-patch.mjs', './dist/kangal-patch.mjs'],
      ],
      'only the bundle and the license file come from the build stage',
    );
    assert.equal(copies.filter((l) => /node_modules/.test(l)).length, 0, 'no node_modules in the final stage');
    // Besides those: package.json ("type": "module") and the entry script, nothing from the build context's sources.
    const fromContext = copies.filter((l) => !l.includes('--from='));
    assert.deepEqual(fromContext.map((l) => l.split(/\s+/)[1]).sort(), ['bin/kangal-patch.js', 'package.json']);
  });

  it('ENTRYPOINT runs the package entry, which loads the bundle dist/kangal-patch.mjs; CMD is run', function () {
    assert.ok(final.lines.includes('ENTRYPOINT ["node", "/app/bin/kangal-patch.js"]'), final.lines.join('\n'));
    assert.ok(final.lines.includes('CMD ["run"]'));
    assert.ok(final.lines.includes('WORKDIR /app'));
    assert.match(readFileSync(join(repoRoot, 'bin/kangal-patch.js'), 'utf8'), /dist\/kangal-patch\.mjs/);
    assert.ok(existsSync(join(repoRoot, 'controller/cli.ts')));
  });

  it('the compiled code imports only Node built-ins and production dependencies', function () {
    const builtins = new Set(builtinModules);
    const files = ['controller', 'schemas', 'proto']
      .flatMap((d) => sourceFiles(join(repoRoot, d)))
      .filter((f) => !f.endsWith('.d.ts'));
    const bare = new Set(
      files
        .flatMap((f) => importSpecifiers(readFileSync(f, 'utf8')))
        .filter((s) => !s.startsWith('.') && !s.startsWith('node:'))
        .map(packageName),
    );
    assert.ok(bare.has('@kubernetes/client-node'), [...bare].join(', '));
    for (const name of bare)
      assert.ok(
        name in pkg.dependencies || builtins.has(name),
        `${name} is imported by the controller but is not in "dependencies"`,
      );
  });
});
