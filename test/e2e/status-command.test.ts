// `kangal-patch status` against a rollout on the lab, as an operator runs it: the compiled product,
// with a kubeconfig of their own. A ServiceAccount bound to the kangal-patch-viewer ClusterRole
// (plans and jobs, no Nodes) follows the rollout with `--watch` into a pipe (timestamped lines of
// what changed, then the summary table; exit 0 once Completed) while the lab admin follows it in a
// pseudo-terminal (`script`: the live view on the alternate screen, the cursor shown again at the
// end). `kubectl kangal status -o json` (the plugin) prints the document. Bad input gets its
// message: an unknown plan lists the plans, a token without rights is told which verb on which
// resource it lacks.
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { delimiter, dirname, join } from 'node:path';
import { CoreV1Api, RbacAuthorizationV1Api } from '@kubernetes/client-node';
import { tokenKubeconfigYaml } from '../lab/cluster/http.js';
import { productEntry } from '../support/product.js';
import { repoRoot } from '../support/manifests.js';
import { runCli } from './support/cli.js';
import { startJobLab, type JobLab } from './support/job-lab.js';
import { examplePlan, factoryImage, labPlan } from './support/plans.js';

const TARGET = 'v1.13.2';
const NODES = ['cp-1', 'worker-1', 'worker-2'];
const SCRIPT = ['/usr/bin/script', '/bin/script'].find((p) => existsSync(p));

/** A kubeconfig with a fresh token of ServiceAccount default/<name>. */
async function serviceAccountKubeconfig(lab: JobLab, name: string): Promise<string> {
  const core = lab.kc.makeApiClient(CoreV1Api);
  await core.createNamespacedServiceAccount({ namespace: 'default', body: { metadata: { name } } });
  const token = await core.createNamespacedServiceAccountToken({
    name,
    namespace: 'default',
    body: { spec: { audiences: [], expirationSeconds: 3600 } },
  });
  const path = join(lab.cluster.dir, `${name}.kubeconfig`);
  writeFileSync(path, tokenKubeconfigYaml(lab.cluster.server, lab.cluster.caPem, token.status?.token ?? '', name), {
    mode: 0o600,
  });
  return path;
}

/** `cmd` in a pseudo-terminal of 100×40 (util-linux `script`); its exit code and everything it drew. */
function inTerminal(cmd: string[], timeoutMs: number): Promise<{ code: number; out: string }> {
  const quoted = cmd.map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ');
  return new Promise((resolve) => {
    execFile(
      SCRIPT ?? 'script',
      ['-qfec', `stty cols 100 rows 40; exec ${quoted}`, '/dev/null'],
      { timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024 },
      (error, stdout) => {
        resolve({ code: error ? (typeof error.code === 'number' ? error.code : -1) : 0, out: stdout });
      },
    );
  });
}

/** The piped watch: a timestamped line per change, then the view with the summary table. */
function checkPipedWatch(out: string): void {
  const [log, final] = out.split('\n\n');
  const lines = (log ?? '').split('\n');
  assert.ok(
    lines.every((l) => /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ /.test(l)),
    `every change is timestamped:\n${log ?? ''}`,
  );
  assert.ok(
    lines.some((l) => / plan simple-upgrade: node worker-1 \(workers\): Rebooting/.test(l)),
    log,
  );
  assert.ok(
    lines.some((l) => / plan simple-upgrade: Completed 3\/3 nodes — completed in /.test(l)),
    log,
  );
  const facts = lines.map((l) => l.slice(21));
  assert.ok(
    facts.every((f, i) => i === 0 || f !== facts[i - 1]),
    'a line is printed only when something changed',
  );
  const summary = (final ?? '').split('\n');
  assert.match(summary[0] ?? '', /^PatchPlan simple-upgrade {2}Completed {2}3\/3 nodes {2}Talos v1\.13\.2$/);
  const table = summary.slice(summary.findIndex((l) => l.startsWith('  node ')));
  assert.deepEqual(table[0]?.trim().split(/\s{2,}/), [
    'node',
    'group',
    'Talos',
    'Kubernetes',
    'cordoned',
    'total',
    'result',
  ]);
  for (const node of NODES) {
    const row = table
      .find((l) => l.trim().startsWith(`${node} `))
      ?.trim()
      .split(/\s{2,}/);
    assert.equal(row?.[2], `v1.12.4 → ${TARGET}`, `${node}: ${table.join('\n')}`);
    assert.equal(row?.[6], 'Completed', node);
  }
  assert.match(
    out,
    /Nodes are not readable with these credentials/,
    'the viewer ClusterRole grants no Nodes: said once, not an error',
  );
}

/** The watch in a terminal: frames on the alternate screen, then the main screen back, the cursor shown, the last view in plain text. */
function checkTerminalWatch(tty: { code: number; out: string }): void {
  assert.equal(tty.code, 0, tty.out.slice(-2000));
  const hidden = tty.out.lastIndexOf('\x1b[?25l');
  assert.ok(hidden >= 0 && tty.out.indexOf('\x1b[?25h', hidden) > hidden, 'the cursor is shown again at the end');
  assert.ok(
    tty.out.includes('\x1b[?1049h') && tty.out.lastIndexOf('\x1b[?1049l') > hidden,
    'the alternate screen is left',
  );
  assert.ok(tty.out.includes('\x1b[H'), 'frames are drawn from the top left');
  const after = tty.out.slice(tty.out.lastIndexOf('\x1b[?1049l'));
  assert.match(after, /PatchPlan simple-upgrade {2}Completed {2}3\/3 nodes/);
  assert.match(after, /^ {2}node +group +Talos +Kubernetes +cordoned +total +result\r?$/m);
  assert.ok(!after.slice('\x1b[?1049l'.length).includes('\x1b'), 'nothing but text after the view is left');
  assert.ok(
    after.split(/\r?\n/).every((l) => l.length <= 100),
    'every line fits the terminal',
  );
  // A frame from the middle of the rollout, as text (for "Watching a rollout" in docs/rollout.md).
  const frames = tty.out.split('\x1b[H').map((f) => f.split('\x1b[J')[0]?.replaceAll('\x1b[K', '') ?? '');
  const busy = frames.filter((f) => f.includes('  active:')).pop();
  if (busy)
    console.log(
      `      a frame of status --watch in the terminal:\n${busy.replace(/\r/g, '').replace(/^/gm, '        ')}`,
    );
}

describe('kangal-patch status end to end: watching a rollout', function () {
  this.timeout(300_000);
  let lab: JobLab;
  let viewer: string;
  let nobody: string;

  before(async function () {
    lab = await startJobLab({
      fleet: { nodes: NODES.length, controlPlanes: 1, talosVersion: 'v1.12.4' },
      images: [factoryImage('nocloud', TARGET)],
    });
    execFileSync(
      lab.cluster.kubectl,
      [
        '--kubeconfig',
        lab.cluster.kubeconfigPath,
        'apply',
        '-f',
        join(repoRoot, 'kustomize/rbac/viewer-cluster-role.yaml'),
      ],
      { stdio: 'pipe' },
    );
    viewer = await serviceAccountKubeconfig(lab, 'rollout-viewer');
    nobody = await serviceAccountKubeconfig(lab, 'nobody');
    await lab.kc.makeApiClient(RbacAuthorizationV1Api).createClusterRoleBinding({
      body: {
        metadata: { name: 'rollout-viewer' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'kangal-patch-viewer' },
        subjects: [{ kind: 'ServiceAccount', name: 'rollout-viewer', namespace: 'default' }],
      },
    });
  });
  after(async function () {
    await lab?.stop();
  });

  it('bad input: an unknown plan, a token without rights, a context the kubeconfig lacks', async function () {
    const unknown = await runCli(['status', 'nope', '--kubeconfig', viewer]);
    assert.equal(unknown.code, 1, unknown.err);
    assert.match(unknown.err, /^kangal-patch status: no PatchPlan named nope; there are no PatchPlans\n$/);
    const denied = await runCli(['status', '--watch', '--kubeconfig', nobody]);
    assert.equal(denied.code, 1, denied.err);
    assert.match(
      denied.err,
      /forbidden: ServiceAccount default\/nobody may not list or watch patchplans\.kangalpatch\.ozalp\.dk \(cluster-wide\)\. Bind the kangal-patch-viewer ClusterRole/,
    );
    const context = await runCli(['status', '--kubeconfig', viewer, '--context', 'elsewhere']);
    assert.equal(context.code, 1);
    assert.match(context.err, /the kubeconfig has no context "elsewhere"; it has: /);
  });

  it('status --watch follows the rollout to Completed (a pipe and a terminal), exit 0, ending with the summary table; kubectl kangal status -o json', async function () {
    const controller = lab.startController({ name: 'status' });
    try {
      const example = examplePlan('simple-upgrade.yaml');
      await lab.applyPlan(
        labPlan(example, lab.talos.endpoint, {
          target: { ...(example.spec.target as Record<string, unknown>), talosVersion: TARGET },
        }),
      );
      const piped = runCli(['status', 'simple-upgrade', '--watch', '--kubeconfig', viewer], 240_000);
      const terminal = SCRIPT
        ? inTerminal(
            [
              process.execPath,
              await productEntry(),
              'status',
              'simple-upgrade',
              '--watch',
              '--kubeconfig',
              lab.cluster.kubeconfigPath,
            ],
            240_000,
          )
        : undefined;

      const pipe = await piped;
      assert.equal(pipe.code, 0, `${pipe.err}\n${pipe.out}`);
      checkPipedWatch(pipe.out);
      console.log(`      status --watch into a pipe, as the viewer:\n${pipe.out.replace(/^/gm, '        ')}`);
      if (terminal) checkTerminalWatch(await terminal);

      // As a kubectl plugin: bin/kubectl-kangal on the PATH (here the checkout's, running the sources).
      const path = [join(repoRoot, 'bin'), dirname(process.execPath), process.env['PATH'] ?? ''].join(delimiter);
      const json = await new Promise<string>((resolve, reject) => {
        execFile(
          lab.cluster.kubectl,
          ['kangal', 'status', 'simple-upgrade', '-o', 'json', '--kubeconfig', lab.cluster.kubeconfigPath],
          { env: { ...process.env, PATH: path }, timeout: 120_000 },
          (error, stdout, stderr) =>
            error ? reject(new Error(`kubectl kangal: ${error.message}\n${stderr}`)) : resolve(stdout),
        );
      });
      const doc = JSON.parse(json) as {
        kind: string;
        version: string;
        nodesReadable: boolean;
        plans: {
          name: string;
          phase: string;
          nodes: { node: string; phase: string; talos: { before?: string; after?: string } }[];
        }[];
      };
      assert.equal(doc.kind, 'KangalPatchStatus');
      assert.equal(doc.nodesReadable, true);
      assert.equal(doc.plans[0]?.phase, 'Completed');
      assert.deepEqual(
        doc.plans[0]?.nodes.map((n) => [n.node, n.phase, n.talos.before, n.talos.after]),
        NODES.map((n) => [n, 'Completed', 'v1.12.4', TARGET]),
      );
    } finally {
      await controller.stop();
    }
  });
});
