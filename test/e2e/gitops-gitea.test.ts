// `kangal-patch run --forge gitea` end to end: a plan pushed with the git CLI rolls out and is
// reported back as one Gitea pull request, opened as a work-in-progress draft and made ready at
// the end, its report linking the plan file at Gitea's `src/commit` URL; the loaded commit gets a
// success status and an invalid file a failing one. Read back through the lab forge's Gitea
// surface, whose every request and response is checked against Gitea's OpenAPI description.
import assert from 'node:assert/strict';
import { stringify } from 'yaml';
import { waitFor } from '../lab/wait.js';
import { startJobLab, type Controller, type JobLab } from './support/job-lab.js';
import { examplePlan, factoryImage, labPlan } from './support/plans.js';

const TARGET = 'v1.13.2';
const REPORT_PREFIX = 'kangal-patch/lab/report/simple-upgrade-';

interface GiteaPull {
  number: number;
  state: string;
  draft: boolean;
  title: string;
  html_url: string;
  head: { ref: string };
}
interface GiteaStatus {
  status: string;
  context: string;
  description: string;
}

describe('GitOps end to end with --forge gitea', function () {
  this.timeout(400_000);
  let lab: JobLab;
  let controller: Controller;

  const gitea = async <T>(path: string): Promise<T> => {
    const res = await fetch(`${lab.forge!.giteaApiUrl}/repos/acme/plans${path}`, {
      headers: { authorization: `token ${lab.forge!.token}`, accept: 'application/json' },
    });
    assert.equal(res.status, 200, `GET ${path}`);
    return (await res.json()) as T;
  };
  const reportPulls = async (): Promise<GiteaPull[]> =>
    (await gitea<GiteaPull[]>('/pulls?state=all&limit=50')).filter((p) => p.head.ref.startsWith(REPORT_PREFIX));

  before(async function () {
    lab = await startJobLab({
      fleet: { nodes: 2, controlPlanes: 1, talosVersion: 'v1.12.4' },
      images: [factoryImage('nocloud', TARGET)],
      plansRepo: true,
    });
    // No --forge-api-url: the default, `<web root of the git URL>/api/v1`, is the lab's Gitea surface.
    controller = lab.startController({ args: lab.gitArgs({ extra: ['--forge', 'gitea'] }) });
    await waitFor(() => controller.logs().some((l) => l.msg === 'GitOps loop started') || undefined, {
      timeoutMs: 60_000,
      description: 'the GitOps loop to start',
    });
  });
  after(async function () {
    await lab?.stop();
  });

  it('reports the rollout as one Gitea PR: opened as WIP, ready at the end; the commit gets a success status', async function () {
    const example = examplePlan('simple-upgrade.yaml');
    const target = { ...(example.spec.target as Record<string, unknown>), talosVersion: TARGET };
    await lab.plans!.write('plans/simple-upgrade.yaml', stringify(labPlan(example, lab.talos.endpoint, { target })));
    const sha = await lab.plans!.commitAndPush('add simple-upgrade');

    const status = await lab.waitForPlan(
      'simple-upgrade',
      'Completed or Failed',
      (s) => s.phase === 'Completed' || s.phase === 'Failed',
      240_000,
    );
    assert.equal(status.phase, 'Completed', JSON.stringify(status));
    const ready = await waitFor(
      async () => {
        const pulls = await reportPulls();
        return pulls.length === 1 && pulls[0]?.draft === false ? pulls[0] : undefined;
      },
      { timeoutMs: 90_000, description: 'one report PR, ready for review' },
    );
    assert.match(ready.title, /^KangalPatch \[lab\]/, 'no WIP prefix left');
    assert.equal(ready.state, 'open');

    // Opened as a draft: the create request itself carried the WIP title.
    const created = lab.forge!.requests.filter(
      (r) => r.method === 'POST' && r.path === '/api/v1/repos/acme/plans/pulls',
    );
    assert.equal(created.length, 1, 'opened once');
    assert.match(String((created[0]?.body as { title?: string } | undefined)?.title), /^WIP: KangalPatch \[lab\]/);
    assert.ok(
      !lab.forge!.requests.some(
        (r) => r.path.startsWith('/repos/') || r.path.startsWith('/api/v3/') || r.path === '/graphql',
      ),
      'nothing went to the GitHub surface',
    );

    await lab.plans!.git(['fetch', '--quiet', 'origin', ready.head.ref]);
    const md = await lab.plans!.git(['show', 'FETCH_HEAD:status/lab/simple-upgrade.md']);
    assert.ok(
      md.includes(`${lab.forge!.url}/acme/plans/src/commit/${sha}/plans/simple-upgrade.yaml`),
      'the plan file linked the Gitea way',
    );
    const statuses = await waitFor(
      async () => {
        const list = await gitea<GiteaStatus[]>(`/commits/${sha}/statuses`);
        return list.some((s) => s.context === 'kangal-patch/lab' && s.status === 'success') ? list : undefined;
      },
      { timeoutMs: 30_000, description: 'a success status on the loaded commit' },
    );
    assert.ok(statuses.length >= 1);
    assert.deepEqual(lab.forge!.violations, [], "every request matched Gitea's OpenAPI description");
  });

  it('an invalid file gets a failing commit status naming the file, line and field', async function () {
    const broken = stringify(
      labPlan(
        {
          apiVersion: 'kangalpatch.ozalp.dk/v1alpha1',
          kind: 'PatchPlan',
          metadata: { name: 'broken' },
          spec: { target: { talosVersion: TARGET } },
        },
        lab.talos.endpoint,
      ),
    ).replace(`talosVersion: ${TARGET}`, 'talosVersion: 1.13');
    await lab.plans!.write('plans/broken.yaml', broken);
    const sha = await lab.plans!.commitAndPush('add a broken plan');
    const failure = await waitFor(
      async () => (await gitea<GiteaStatus[]>(`/commits/${sha}/statuses`)).find((s) => s.status === 'failure'),
      { timeoutMs: 30_000, description: 'a failing commit status' },
    );
    assert.equal(failure.context, 'kangal-patch/lab');
    assert.match(failure.description, /plans\/broken\.yaml:\d+:\d+: spec\.target\.talosVersion/);
    assert.ok(!JSON.stringify(controller.logs()).includes(lab.forge!.token), 'no token in the log');
    assert.deepEqual(lab.forge!.violations, []);
  });
});
