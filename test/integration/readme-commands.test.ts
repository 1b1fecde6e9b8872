// Every shell command of the documentation (README.md and every page of docs/) either runs here, as
// written, against a lab control plane of its own (install, Secret, validate, uninstall), or is listed
// below with the test that covers it or the reason it cannot run as written (placeholders for the
// reader's own cluster). A new command that is in neither list fails this test, so the documentation
// cannot drift from what works.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { startCluster, type LabCluster } from '../lab/cluster/index.js';
import { repoRoot } from '../support/manifests.js';

/** Commands run in this order; `cwd`: where a reader would run them. */
const RUN: { command: string; cwd: 'repo' | 'plans-repo' | 'talos-files' }[] = [
  { command: 'kubectl kustomize kustomize/default', cwd: 'repo' },
  { command: 'kubectl apply --server-side -k kustomize/default', cwd: 'repo' },
  {
    command:
      'kubectl -n kangal-patch create secret generic talos-credentials --from-file=ca.crt --from-file=tls.crt --from-file=tls.key',
    cwd: 'talos-files',
  },
  { command: 'npx kangal-patch validate plans/', cwd: 'plans-repo' },
  { command: 'npx kangal-patch validate --output json plans/', cwd: 'plans-repo' },
  { command: 'npx kangal-patch validate --namespace ops plans/', cwd: 'plans-repo' },
  { command: 'kubectl delete patchplan --all --wait', cwd: 'repo' },
  { command: 'kubectl delete -k kustomize/default', cwd: 'repo' },
];

/** Commands not run here, each with why and where it is covered. */
const COVERED_ELSEWHERE: Record<string, string> = {
  'npm ci && npm run demo':
    'npm run demo:check (test/demo/check/) runs every demo scenario end to end; test/e2e/demo.test.ts runs the entry in npm test',
  'npm test': 'this suite',
  'helm install kangal-patch charts/kangal-patch --namespace kangal-patch --create-namespace --set image.repository=ghcr.io/example/kangal-patch --set git.url=https://github.com/example/talos-plans.git --set clusterName=production-eu-1 --set-file gitCredentials.token=read-token --set-file gitCredentials.writeToken=write-token':
    "test/integration/helm-chart.test.ts runs it as written (with the lab's Helm and token files), and the next Helm commands",
  'kubectl -n kangal-patch get deployment,pods': 'test/integration/helm-chart.test.ts, after the helm install',
  'helm upgrade kangal-patch charts/kangal-patch --namespace kangal-patch --reuse-values --set image.tag=v0.1.1':
    'test/integration/helm-chart.test.ts runs it as written',
  'helm uninstall kangal-patch --namespace kangal-patch': 'test/integration/helm-chart.test.ts runs it as written',
  'kubectl delete crd patchplans.kangalpatch.ozalp.dk patchjobs.kangalpatch.ozalp.dk':
    'test/integration/helm-chart.test.ts runs it as written, after the uninstall',
  'export KUBECONFIG=<the printed path>':
    'a placeholder for the path `npm run lab -- up` prints (test/integration/lab-lifecycle.test.ts)',
  'KUBECTL=$(bash test/lab/gobuild/build.sh)/kubectl':
    "the lab build (npm test's pretest, test/lab/prepare.sh, runs it)",
  '$KUBECTL get nodes -o wide': 'needs the running lab of the block above (lab-lifecycle)',
  '$KUBECTL apply -k kustomize/crd && $KUBECTL apply -f examples/simple-upgrade.yaml':
    'every e2e fixture applies kustomize/crd; test/unit/schemas/valid-plans.test.ts validates the example',
  '$KUBECTL get patchplan': 'needs the running lab of the block above',
  'git -c http.extraHeader="Authorization: Bearer $(cat <GIT_TOKEN_FILE>)" clone <GIT_URL>':
    'placeholders printed by `npm run demo -- --keep`; test/e2e/gitops-*.test.ts clone the same way',
  'npx kangal-patch run --kubeconfig "$KUBECONFIG" --namespace kangal-patch --leader-elect':
    'runs until stopped; every test/e2e file starts it with these flags',
  'npx kangal-patch preview plans/prod.yaml --kubeconfig ~/.kube/prod':
    "the reader's own plan file and cluster; test/e2e/patchplan-rollout.test.ts runs preview on the lab",
  'npx kangal-patch preview plans/prod.yaml -o json':
    "the reader's own plan file; test/e2e/patchplan-rollout.test.ts checks the JSON",
  'npm run image':
    'pulls node:24-trixie-slim, which cannot be pulled here; test/e2e/container-image.test.ts builds the same Dockerfile with the same script (test/lab/image/build.sh) on the lab base and runs the image',
  'podman tag kangal-patch:0.1.0 registry.example.com/kangal-patch:0.1.0': "the reader's own registry",
  'podman push registry.example.com/kangal-patch:0.1.0': "the reader's own registry",
  'kubectl kangal status --watch':
    'test/e2e/status-command.test.ts runs `status --watch` (a pipe and a terminal) and `kubectl kangal status` through the plugin on the lab',
  'kubectl kangal status simple-upgrade --watch':
    'test/e2e/status-command.test.ts watches the simple-upgrade example on the lab',
  'kangal-patch status -o json': 'test/e2e/status-command.test.ts reads the JSON document on the lab',
  'kubectl annotate node worker-7 kangalpatch.ozalp.dk/hold="INC-4711: disk replacement"':
    "the reader's own node; test/e2e/patchplan-holds.test.ts sets the same annotation on the lab",
  'kubectl annotate node worker-9 kangalpatch.ozalp.dk/hold="skip: retiring this week" --overwrite':
    "the reader's own node; test/e2e/patchplan-holds.test.ts sets a skip hold on the lab",
  'kubectl annotate node worker-7 kangalpatch.ozalp.dk/hold-':
    "the reader's own node; test/e2e/patchplan-holds.test.ts removes the annotation on the lab",
};

/** The pages whose commands a reader runs: the README and every page of docs/. */
function docPages(): string[] {
  const pages = readdirSync(join(repoRoot, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .sort()
    .map((f) => `docs/${f}`);
  return ['README.md', ...pages];
}

/** Shell commands of the ```sh blocks of every page, without trailing comments. */
function docCommands(): string[] {
  const commands: string[] = [];
  for (const page of docPages()) {
    const text = readFileSync(join(repoRoot, page), 'utf8');
    for (const block of text.matchAll(/```(?:sh|bash|shell)\n([\s\S]*?)```/g)) {
      for (const line of (block[1] ?? '').split('\n')) {
        const command = line.replace(/\s+#\s.*$/, '').trim();
        if (command !== '' && !command.startsWith('#')) commands.push(command);
      }
    }
  }
  return commands;
}

function sh(command: string, cwd: string, env: NodeJS.ProcessEnv): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', ['-c', command], { cwd, env });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, out }));
  });
}

describe('README and docs/: every shell command works as written', function () {
  this.timeout(300_000);
  let cluster: LabCluster;
  let talosFiles: string;

  before(async function () {
    cluster = await startCluster();
    talosFiles = mkdtempSync(join(tmpdir(), 'kangal-readme-'));
    // Stand-ins for the files of a talosconfig (the command only reads them).
    for (const f of ['ca.crt', 'tls.crt', 'tls.key'])
      writeFileSync(join(talosFiles, f), `-----BEGIN PLACEHOLDER-----\n${f}\n-----END PLACEHOLDER-----\n`);
  });
  after(async function () {
    await cluster?.stop();
    if (talosFiles) rmSync(talosFiles, { recursive: true, force: true });
  });

  it('lists every command of the README and docs/ either here or with the test that covers it', function () {
    const known = new Set([...RUN.map((r) => r.command), ...Object.keys(COVERED_ELSEWHERE)]);
    const unknown = docCommands().filter((c) => !known.has(c));
    assert.deepEqual(
      unknown,
      [],
      'commands of the README and docs/ neither run nor covered: add them to RUN or COVERED_ELSEWHERE',
    );
    const stale = [...known].filter((c) => !docCommands().includes(c));
    assert.deepEqual(stale, [], 'commands listed here that neither the README nor docs/ has any more');
  });

  it('runs install, the Talos Secret, validate and uninstall against a lab control plane', async function () {
    const env = {
      ...process.env,
      KUBECONFIG: cluster.kubeconfigPath,
      PATH: `${dirname(cluster.kubectl)}:${process.env.PATH ?? ''}`,
    };
    const dirs = { repo: repoRoot, 'plans-repo': join(repoRoot, 'examples/plans-repo'), 'talos-files': talosFiles };
    for (const { command, cwd } of RUN) {
      const r = await sh(command, dirs[cwd], env);
      assert.equal(r.code, 0, `${command}\n${r.out}`);
      if (command === 'kubectl kustomize kustomize/default') assert.match(r.out, /kind: Deployment/);
      if (command.includes('--output json')) assert.deepEqual(JSON.parse(r.out), []);
    }
  });
});
