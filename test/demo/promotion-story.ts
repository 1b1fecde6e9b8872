// `--scenario promotion`: two clusters that never talk to each other, staging and production, share
// one plans repository on the lab forge (laid out as examples/fleet/), each with its own apiserver,
// simulated fleet, Talos simulator, registry, controller and token — the same two-cluster lab the
// promotion e2e test starts (startJobLab twice, one forge). Upstream releases Talos v1.12.5; staging
// proposes it, the demo merges, staging rolls it out and its signed report is merged into Git;
// production waits out the soak (counted down from its template's status), proposes v1.12.5 with
// the evidence, the demo merges, production rolls it out. The demo plays upstream and the humans only.
import { execFile } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { startJobLab, type Controller, type JobLab } from '../e2e/support/job-lab.js';
import { factoryImage } from '../e2e/support/plans.js';
import { DEMO_TALOS_VERSION } from '../lab/demo-fleet.js';
import { makeLabDir } from '../lab/process.js';
import { DEMO_TIMINGS, TEST_TIMINGS } from '../lab/talos/index.js';
import { waitFor } from '../lab/wait.js';
import type { Forge } from '../lab/forge/index.js';
import type { WorkingCopy } from '../lab/forge/working-copy.js';
import { ensureLabBinaries } from './lab-build.js';
import { fleetTemplate, type LabPlace } from './plan-files.js';
import { findProposalPr, findReportPr, mergePr, readyReportPr } from './plans-repo.js';
import { statusDocument, summaryTable, type Fact } from '../../controller/core/status-view/index.js';
import { openDisplay, statusFacts, statusLines, type Display, type Screen } from './terminal.js';
import { evidenceLines, sideBySide, soakLine } from './view.js';
import { watchCluster, type ClusterWatch, type PlanSnapshot } from './watch.js';

const run = promisify(execFile);
const RELEASE = 'v1.12.5';
const SOAK_S = 20;
const DAY = 86_400_000;
const RECONCILE_NOW = 'kangalpatch.ozalp.dk/reconcile-now';
const CLUSTERS = ['staging', 'production'] as const;
type ClusterName = (typeof CLUSTERS)[number];
const template = (c: ClusterName): string => `${c}-nodes`;
const child = (c: ClusterName): string => `${template(c)}-${RELEASE.replace(/\./g, '-')}`;

const PROMOTION_STORY = `examples/fleet/ on two lab clusters sharing one plans repository: Talos ${RELEASE} appears, staging proposes it, the demo merges, staging upgrades and its signed report is merged into Git; after a ${SOAK_S} s soak production proposes ${RELEASE} with staging's evidence, the demo merges, production upgrades`;

class DemoFailure extends Error {}

interface Side {
  name: ClusterName;
  lab: JobLab;
  watch?: ClusterWatch;
  controller?: Controller;
}

interface PictureState {
  sides: Side[];
  soak?: { eligibleTime: string };
}

/** One cluster's half of the screen: `kangal-patch status` of its every plan, `width` wide. */
const sideLines = (s: Side, nowMs: number, width: number): string[] => {
  const input = s.watch?.input();
  return [
    `── ${s.name} (${s.lab.fleet.nodes().length} nodes) ──`,
    ...(input?.plans.length ? statusLines(input, nowMs, width) : ['no PatchPlan yet']),
  ];
};

const soakOf = (state: PictureState, nowMs: number): string | undefined =>
  state.soak &&
  soakLine(
    { cluster: 'production', version: RELEASE, upstream: 'staging', eligibleTime: state.soak.eligibleTime },
    nowMs,
  );

/** Staging on the left, production on the right; the soak countdown under both. */
const twoClusters: Screen<PictureState> = {
  lines: (state, nowMs, columns) => {
    // The half sideBySide gives each cluster.
    const half = Math.max(20, Math.floor((columns - 3) / 2));
    const [left, right] = state.sides.map((s) => sideLines(s, nowMs, half));
    const soak = soakOf(state, nowMs);
    return [...sideBySide(left ?? [], right ?? [], columns), ...(soak ? [soak] : [])];
  },
  facts: (state, nowMs) => {
    const out = new Map<string, Fact>();
    for (const s of state.sides) {
      const input = s.watch?.input();
      if (!input) continue;
      for (const [k, f] of statusFacts(input, nowMs))
        out.set(`${s.name} ${k}`, { signature: f.signature, text: `${s.name.padEnd(10)} | ${f.text}` });
    }
    const soak = soakOf(state, nowMs);
    // Plain lines: the countdown every 5 s (and its end), not every second.
    const left = state.soak ? Math.ceil((Date.parse(state.soak.eligibleTime) - nowMs) / 1000) : 0;
    if (soak) out.set('soak', { signature: String(left > 0 ? Math.ceil(left / 5) : 0), text: soak });
    return out;
  },
};

/** Resolves when `check` gives a value on a watch event; rejects at the deadline or when a controller exits. */
interface Waiters {
  until<T>(description: string, timeoutMs: number, check: () => T | undefined): Promise<T>;
  changed(): void;
  fail(err: Error): void;
}

function waiters(): Waiters {
  const pending = new Set<{ check: () => boolean; fail: (err: Error) => void }>();
  return {
    until: (description, timeoutMs, check) =>
      new Promise((resolve, reject) => {
        const w = {
          check: () => {
            const v = check();
            if (v === undefined) return false;
            done();
            resolve(v);
            return true;
          },
          fail: (err: Error) => {
            done();
            reject(err);
          },
        };
        const deadline = setTimeout(
          () => w.fail(new DemoFailure(`${description}: not within ${timeoutMs / 1000} s`)),
          timeoutMs,
        );
        const done = (): void => {
          clearTimeout(deadline);
          pending.delete(w);
        };
        pending.add(w);
        w.check();
      }),
    changed: () => {
      for (const w of [...pending]) w.check();
    },
    fail: (err) => {
      for (const w of [...pending]) w.fail(err);
    },
  };
}

/** What every step of the story uses: the two clusters, the shared forge and clone, and how to wait and speak. */
interface Story {
  staging: JobLab;
  production: JobLab;
  forge: Forge;
  plans: WorkingCopy;
  state: PictureState;
  display: Display<PictureState>;
  wait: Waiters;
  scratch: string;
  say: (line: string) => void;
  plan: (c: ClusterName, name: string) => PlanSnapshot | undefined;
}

const lab = (story: Story, c: ClusterName): JobLab => (c === 'staging' ? story.staging : story.production);

async function kubectl(story: Story, c: ClusterName, args: string[]): Promise<void> {
  story.say(`[${c}] $ kubectl ${args.join(' ')}`);
  await run(lab(story, c).cluster.kubectl, ['--kubeconfig', lab(story, c).cluster.kubeconfigPath, ...args]);
}

/** Two clusters as the promotion e2e test starts them: staging holds the forge and the plans repository. */
async function startClusters(timings: 'demo' | 'test', stops: (() => Promise<void>)[]): Promise<[JobLab, JobLab]> {
  const images = [factoryImage('nocloud', RELEASE)];
  const talos = timings === 'demo' ? DEMO_TIMINGS : TEST_TIMINGS;
  const labs = await Promise.allSettled([
    startJobLab({
      fleet: { nodes: 2, controlPlanes: 1, talosVersion: DEMO_TALOS_VERSION },
      images,
      timings: talos,
      plansRepo: true,
    }),
    startJobLab({
      fleet: { nodes: 3, controlPlanes: 1, talosVersion: DEMO_TALOS_VERSION, subnet: 11 },
      images,
      timings: talos,
    }),
  ]);
  for (const l of labs) if (l.status === 'fulfilled') stops.push(() => l.value.stop());
  const failed = labs.find((l) => l.status === 'rejected');
  if (failed) throw failed.reason;
  return labs.map((l) => (l as PromiseFulfilledResult<JobLab>).value) as [JobLab, JobLab];
}

/** Staging signs its reports; production holds staging's public key, outside the repository. */
function makeKeys(dir: string): { signingKey: string; keysDir: string } {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const signingKey = join(dir, 'staging-signing.pem');
  writeFileSync(signingKey, privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600 });
  const keysDir = join(dir, 'upstream-keys');
  mkdirSync(keysDir);
  writeFileSync(join(keysDir, 'staging.pem'), publicKey.export({ type: 'spki', format: 'pem' }));
  return { signingKey, keysDir };
}

/** `kangal-patch run` per cluster, each with its own token, path and name; a controller that exits fails the story. */
function startControllers(story: Story, stops: (() => Promise<void>)[]): void {
  const { forge, scratch } = story;
  const keys = makeKeys(scratch);
  story.say(
    'keys: staging signs its reports with an Ed25519 key (--report-signing-key-file); production trusts its public key (--promotion-keys-dir with staging.pem), kept out of the repository',
  );
  const tokenFile = (name: string): string => {
    const f = join(scratch, `${name}-token`);
    writeFileSync(f, `${forge.issueToken()}\n`, { mode: 0o600 });
    return f;
  };
  for (const side of story.state.sides) {
    const own = [
      '--cluster-name',
      side.name,
      '--git-path',
      `clusters/${side.name}`,
      '--git-token-file',
      tokenFile(side.name),
      '--forge',
      'github',
      '--forge-api-url',
      forge.apiUrl,
      '--releases-api-url',
      forge.apiUrl,
      '--releases-token-file',
      tokenFile(`${side.name}-releases`),
      '--report-min-interval',
      '1s',
      ...(side.name === 'staging'
        ? ['--report-signing-key-file', keys.signingKey]
        : ['--promotion-keys-dir', keys.keysDir]),
    ];
    // gitArgs: the shared repository's URL and a cache directory; the flags after it set this cluster's name, path, token and forge.
    const controller = side.lab.startController({
      name: `kangal-patch-${side.name}`,
      args: story.staging.gitArgs({ pollInterval: '2s', extra: own }),
    });
    side.controller = controller;
    story.say(
      `[${side.name}] $ kangal-patch run --git-url ${forge.url}/acme/plans.git --poll-interval 2s ${own.join(' ').replaceAll(scratch, '$DEMO')}   (log: ${controller.process.logPath})`,
    );
    void controller.process.exited.then((code) =>
      story.wait.fail(
        new DemoFailure(
          `kangal-patch run on ${side.name} exited (code ${String(code)}):\n${controller.process.tail(20)}`,
        ),
      ),
    );
    stops.push(async () => {
      await controller.stop();
    });
  }
}

/** The templates of examples/fleet/ pushed with git; both controllers make their first release check. */
async function pushTemplates(story: Story): Promise<void> {
  const { plans } = story;
  const place = (c: ClusterName): LabPlace => ({ talosEndpoint: lab(story, c).talos.endpoint, delay: '0s' });
  for (const c of CLUSTERS) await plans.write(`clusters/${c}/nodes.yaml`, fleetTemplate(place(c), c, `${SOAK_S}s`));
  const message = 'Two clusters: staging follows Talos patch releases, production follows staging';
  story.say(
    `$ git add clusters/staging/nodes.yaml clusters/production/nodes.yaml && git commit -m "${message}" && git push   # examples/fleet/, adapted to the lab (soak ${SOAK_S}s)`,
  );
  await plans.commitAndPush(message);
}

/** The release appears; staging proposes it, the user merges, staging rolls it out; its report PR is merged. */
async function stagingTakesTheRelease(story: Story): Promise<void> {
  const { forge, say, wait } = story;
  for (const c of CLUSTERS) {
    await wait.until(`${c}: template ${template(c)} applied from Git and its first release check`, 120_000, () =>
      story.plan(c, template(c))?.autoUpdate?.lastCheckTime ? true : undefined,
    );
  }
  say(`first checks: both clusters run ${DEMO_TALOS_VERSION}, the newest release; nothing to propose`);
  forge.addRelease('siderolabs', 'talos', RELEASE, { body: `Talos ${RELEASE}: a patch release` });
  say(
    `upstream releases Talos ${RELEASE} (its installer image is in both clusters' registries); the templates check every minute, the demo asks both to check now:`,
  );
  for (const c of CLUSTERS)
    await kubectl(story, c, [
      'annotate',
      '--overwrite',
      'patchplan',
      template(c),
      `${RECONCILE_NOW}=${new Date().toISOString()}`,
    ]);

  await wait.until(`staging proposes ${RELEASE}`, 120_000, () =>
    story.plan('staging', template('staging'))?.autoUpdate?.lastProposedVersion === RELEASE ? true : undefined,
  );
  const pr = await findProposalPr(forge, 'staging', template('staging'), RELEASE);
  if (!pr) throw new DemoFailure(`staging's status names a proposal of ${RELEASE} but the forge has none`);
  say(`[staging] proposal PR: ${pr.url} "${pr.title}"`);
  const waiting = await wait.until('production waits for staging', 60_000, () =>
    story
      .plan('production', template('production'))
      ?.autoUpdate?.promotion?.stages.find((s) => s.cluster === 'staging' && s.state === 'NotRolledOut'),
  );
  say(`[production] proposes nothing: ${waiting.message ?? 'waiting for staging'}`);
  say(
    `the user merges staging's proposal (PUT /repos/acme/plans/pulls/${pr.number}/merge); staging's controller applies the child plan ${child('staging')} at its next poll`,
  );
  await mergePr(forge, pr.number);

  const done = await wait.until(`staging's rollout of ${RELEASE}`, 600_000, () =>
    terminalPlan(story.plan('staging', child('staging'))),
  );
  if (done.phase !== 'Completed' || (done.failedNodes ?? 0) > 0)
    throw new DemoFailure(`staging's rollout ended ${done.phase ?? '?'}: ${done.message ?? ''}`);
  say(
    `[staging] ${child('staging')} completed: ${done.completedNodes ?? 0}/${done.totalNodes ?? 0} nodes on ${RELEASE}; the controller marks its report PR ready for review`,
  );
  const report = await waitFor(() => readyReportPr(forge, 'staging', child('staging')), {
    timeoutMs: 120_000,
    intervalMs: 500,
    description: `staging's report PR of ${child('staging')}, ready for review`,
  });
  say(
    `[staging] report PR ${report.url}: the user merges it, so the signed report is on main, where production reads it`,
  );
  await mergePr(forge, report.number);
  await story.plans.git(['pull', '--quiet', '--ff-only', 'origin', 'main']);
  const files = (await story.plans.git(['ls-files', 'status/staging'])).split('\n').filter(Boolean);
  say(`$ git pull && git ls-files status/staging   →   ${files.join('  ')}`);
}

/** Production verifies the report and soaks: the countdown runs to its template's eligible time, until it proposes. */
async function productionSoaks(story: Story): Promise<void> {
  const { wait, state, display } = story;
  const soaking = await wait.until('production sees the report and soaks', 120_000, () => {
    const a = story.plan('production', template('production'))?.autoUpdate;
    return a?.lastProposedVersion === RELEASE || a?.promotion?.eligibleTime ? a : undefined;
  });
  let ticker: NodeJS.Timeout | undefined;
  if (soaking.promotion?.eligibleTime) {
    story.say(
      `[production] staging's report verifies with staging's key; ${soaking.promotion.stages[0]?.message ?? ''}`,
    );
    state.soak = { eligibleTime: soaking.promotion.eligibleTime };
    // The countdown is the display's clock; the condition is the template's own wake-up at eligibleTime.
    ticker = setInterval(() => display.show(state), 1000);
  }
  try {
    await wait.until(`production proposes ${RELEASE} after the soak`, (SOAK_S + 120) * 1000, () =>
      story.plan('production', template('production'))?.autoUpdate?.lastProposedVersion === RELEASE ? true : undefined,
    );
  } finally {
    clearInterval(ticker);
    delete state.soak;
  }
}

/** Production's proposal with its evidence; the user merges; production rolls it out. */
async function productionTakesTheRelease(story: Story): Promise<PlanSnapshot> {
  const { forge, say } = story;
  const pr = await findProposalPr(forge, 'production', template('production'), RELEASE);
  if (!pr) throw new DemoFailure(`production's status names a proposal of ${RELEASE} but the forge has none`);
  say(`[production] the soak is over: proposal PR ${pr.url} "${pr.title}", with the evidence:`);
  for (const line of evidenceLines(pr.body)) say(`    ${line}`);
  say(`the user reviews the evidence and merges it (PUT /repos/acme/plans/pulls/${pr.number}/merge)`);
  await mergePr(forge, pr.number);
  return story.wait.until(`production's rollout of ${RELEASE}`, 600_000, () =>
    terminalPlan(story.plan('production', child('production'))),
  );
}

/** Per cluster: its child plan's report PR and `kangal-patch status`'s summary table (versions before → after, time cordoned, result). */
async function printSummary(story: Story): Promise<void> {
  console.log('');
  for (const side of story.state.sides) {
    const input = side.watch?.input();
    const nodes =
      (input && statusDocument(input, Date.now()).plans.find((p) => p.name === child(side.name))?.nodes) ?? [];
    console.log(
      `${side.name}: ${child(side.name)}, report PR ${(await findReportPr(story.forge, side.name, child(side.name))) ?? 'none yet'}`,
    );
    for (const line of summaryTable(nodes, Infinity, '  ')) console.log(line);
  }
}

async function keepUntilSignal(story: Story): Promise<void> {
  const stopped = new Promise<void>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  console.log('\n--keep: everything stays up until Ctrl-C');
  for (const side of story.state.sides)
    console.log(
      `  ${side.name}: KUBECONFIG=${side.lab.cluster.kubeconfigPath} ${side.lab.cluster.kubectl} get patchplan,patchjob   (controller log ${side.controller?.process.logPath ?? '?'})`,
    );
  console.log(`  plans repository: ${story.forge.url}/acme/plans`);
  await stopped;
}

export async function runPromotionDemo(o: {
  timings: 'demo' | 'test';
  keep: boolean;
  startedMs: number;
}): Promise<number> {
  const state: PictureState = { sides: [] };
  const display = openDisplay(process.stdout, o.startedMs, Date.now, twoClusters);
  const say = (line: string): void => display.say(line);
  const scratch = makeLabDir('kangal-demo-promotion');
  const stops: (() => Promise<void>)[] = [() => Promise.resolve(scratch.remove())];
  const wait = waiters();
  try {
    say(`scenario promotion: ${PROMOTION_STORY}`);
    await ensureLabBinaries(say);
    say(
      'starting two lab clusters (each: kube-apiserver, simulated fleet, Talos API simulator, registry), one forge with the plans repository, and the compiled controller...',
    );
    const [staging, production] = await startClusters(o.timings, stops);
    const forge = staging.forge!;
    state.sides = [
      { name: 'staging', lab: staging },
      { name: 'production', lab: production },
    ];
    say(
      `lab ready: staging ${staging.fleet.nodes().length} nodes, production ${production.fleet.nodes().length} nodes, all on Talos ${DEMO_TALOS_VERSION}; one plans repository for both: ${forge.url}/acme/plans`,
    );
    await forge.createRepo('siderolabs', 'talos', {
      files: { 'README.md': "Talos Linux (the demo's releases feed)\n" },
    });
    forge.addRelease('siderolabs', 'talos', DEMO_TALOS_VERSION, {
      publishedAt: new Date(Date.now() - 30 * DAY).toISOString(),
      body: `Talos ${DEMO_TALOS_VERSION}`,
    });
    const story: Story = {
      staging,
      production,
      forge,
      plans: staging.plans!,
      state,
      display,
      wait,
      scratch: scratch.path,
      say,
      plan: (c, name) =>
        state.sides
          .find((s) => s.name === c)
          ?.watch?.plans()
          .find((p) => p.name === name),
    };
    await pushTemplates(story);
    startControllers(story, stops);
    for (const side of state.sides) {
      const watch = await watchCluster(side.lab.kc, () => {
        display.show(state);
        wait.changed();
      });
      side.watch = watch;
      stops.push(() => Promise.resolve(watch.stop()));
    }

    await stagingTakesTheRelease(story);
    await productionSoaks(story);
    const done = await productionTakesTheRelease(story);
    display.show(state);
    display.close();
    await printSummary(story);
    const wallSeconds = Math.round((Date.now() - o.startedMs) / 1000);
    if (o.keep) await keepUntilSignal(story);
    if (done.phase !== 'Completed' || (done.failedNodes ?? 0) > 0) {
      console.log(
        `production's rollout did not complete: ${done.phase ?? '?'} ${done.message ?? ''} (after ${wallSeconds} s)`,
      );
      return 1;
    }
    console.log(
      `promoted: ${RELEASE} completed on staging, soaked ${SOAK_S} s, then completed on production; demo wall time ${wallSeconds} s (lab start included)`,
    );
    return 0;
  } finally {
    display.close();
    for (const s of stops.splice(0).reverse()) await s();
  }
}

function terminalPlan(p: PlanSnapshot | undefined): PlanSnapshot | undefined {
  return p && ['Completed', 'Failed', 'Cancelled'].includes(p.phase ?? '') ? p : undefined;
}
