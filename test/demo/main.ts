// `npm run demo [-- --keep] [-- --scenario <name>]`: the product's main job on the lab, end to
// end. Builds the lab if needed, starts it (12 nodes, workloads with PDBs, installer images),
// creates the plans repository, starts `kangal-patch run` from the compiled output with an
// operator's flags, pushes a plan with the git CLI, shows the rollout live, and ends with a
// summary, the report PR and an exit code that says whether the rollout completed.
// `--scenario promotion` runs two clusters instead (test/demo/promotion-story.ts).
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { join } from 'node:path';
import { Command, Option } from 'commander';
import type { KubeConfig } from '@kubernetes/client-node';
import { startLab, type Lab } from '../lab/lab.js';
import { DEMO_TALOS_VERSION, DEMO_WORKLOADS, demoNodes, publishInstallers } from '../lab/demo-fleet.js';
import { loadKubeConfig } from '../lab/kube.js';
import { makeLabDir, type ManagedProcess } from '../lab/process.js';
import { DEMO_TIMINGS, TEST_TIMINGS } from '../lab/talos/index.js';
import { waitFor } from '../lab/wait.js';
import { ensureLabBinaries } from './lab-build.js';
import { TALOS_TARGET } from './plan-files.js';
import { createPlansRepo, findReportPr, type PlansRepo } from './plans-repo.js';
import { buildProduct, repoRoot, startProduct } from './product.js';
import { runPromotionDemo } from './promotion-story.js';
import { SCENARIO_NAMES, SCENARIOS, type Scenario, type StoryContext } from './scenarios.js';
import { statusDocument, summaryTable } from '../../controller/core/status-view/index.js';
import { openTerminal, type Terminal } from './terminal.js';
import { nodeVersions, watchRollout, type PlanSnapshot, type RolloutWatch } from './watch.js';

const run = promisify(execFile);
const CLUSTER = 'demo';
const NAMESPACE = 'kangal-patch';
const SECRET = 'talos-credentials';

interface DemoOptions {
  keep: boolean;
  scenario: string;
  timings: 'demo' | 'test';
}

class DemoFailure extends Error {}

async function main(argv: string[]): Promise<number> {
  const program = new Command('demo')
    .description('run a real rollout on the lab: controller, Git push, live view, summary')
    .option('--keep', 'leave the lab and the controller running at the end (Ctrl-C stops them)', false)
    .addOption(new Option('--scenario <name>', 'the story to run').choices(SCENARIO_NAMES).default('custom-groups'))
    .addOption(
      new Option('--timings <kind>', 'Talos simulator timings: demo (seconds per reboot) or test (sub-second, for CI)')
        .choices(['demo', 'test'])
        .default('demo'),
    )
    .exitOverride();
  program.parse(argv, { from: 'user' });
  const opts = program.opts<DemoOptions>();
  const started = Date.now();
  // Two clusters side by side: a story of its own (the others run one lab and one controller).
  if (opts.scenario === 'promotion')
    return runPromotionDemo({ timings: opts.timings, keep: opts.keep, startedMs: started });
  return runOneCluster(opts, started);
}

/** A one-cluster scenario: one lab, one controller, the pushed plan (or the one its story leads to) followed to its end. */
async function runOneCluster(opts: DemoOptions, started: number): Promise<number> {
  const term = openTerminal(process.stdout, started, Date.now);
  const makeScenario = SCENARIOS[opts.scenario];
  if (!makeScenario) throw new DemoFailure(`unknown scenario ${opts.scenario}`);
  const scenario = makeScenario();
  term.say(`scenario ${scenario.name}: ${scenario.story}`);

  const dir = makeLabDir('kangal-demo');
  const stops: (() => Promise<void> | void)[] = [() => dir.remove()];
  const stopAll = async (): Promise<void> => {
    for (const s of stops.splice(0).reverse()) await s();
  };
  let watch: RolloutWatch | undefined;
  try {
    await ensureLabBinaries((l) => term.say(l));
    term.say(
      'building the controller (npm run build: tsc → dist/, laid out as the container image; unchanged sources reuse the cached build) and starting the lab...',
    );
    const appDir = join(dir.path, 'app');
    const fleetVersion = scenario.fleetTalosVersion ?? DEMO_TALOS_VERSION;
    const [lab] = await Promise.all([
      startLab({
        nodes: demoNodes(fleetVersion),
        workloads: DEMO_WORKLOADS,
        talosTimings: opts.timings === 'demo' ? DEMO_TIMINGS : TEST_TIMINGS,
      }),
      buildProduct(appDir),
    ]);
    stops.push(() => lab.stop());
    const installers = [...new Set([fleetVersion, TALOS_TARGET])];
    await publishInstallers(lab.registry, installers);
    term.say(
      `lab ready: ${lab.fleet.nodes().length} nodes (3 control plane) on Talos ${fleetVersion}, workloads with PDBs, installers ${installers.join(' and ')} in the registry`,
    );

    const kc = loadKubeConfig(lab.cluster.kubeconfigPath);
    const kubectl = async (args: string[], quiet = false): Promise<void> => {
      if (!quiet) term.say(`$ kubectl ${args.map((a) => (/[\s{"]/.test(a) ? `'${a}'` : a)).join(' ')}`);
      await run(lab.cluster.kubectl, ['--kubeconfig', lab.cluster.kubeconfigPath, ...args]);
    };
    await installOperatorPrerequisites(lab, kubectl);
    term.say(`installed the CRDs (kustomize/crd), namespace ${NAMESPACE} and the Talos Secret ${SECRET}`);

    const plans = await createPlansRepo(lab.forge, dir.path);
    term.say(`plans repository: ${plans.cloneUrl} (cloned to ${plans.clone.dir})`);

    const logPath = join(dir.path, 'kangal-patch.log');
    const args = controllerArgs(lab, plans, scenario.releasesFeed === true);
    const controller = startProduct(appDir, args, { logPath, podName: 'kangal-patch-demo' });
    stops.push(() => controller.stop(10_000));
    term.say(`$ kangal-patch run ${args.map((a) => a.replace(dir.path, '$DEMO')).join(' ')}`);
    term.say(`controller log: ${logPath}`);

    const before = await nodeVersions(kc);
    const story = storyContext({ lab, term, kubectl, kc, plans, controller });

    await scenario.arrange?.(story);
    const file = scenario.file(
      { talosEndpoint: lab.talos.endpoint, delay: opts.timings === 'demo' ? '5s' : '0s' },
      Date.now(),
    );
    await plans.clone.write(file.path, file.content);
    const message = scenario.pushMessage ?? `Roll out ${scenario.plan}`;
    term.say(`$ git add ${file.path} && git commit -m "${message}" && git push`);
    const sha = await plans.clone.commitAndPush(message);
    term.say(`pushed ${sha.slice(0, 12)}; the controller polls every 5 s`);

    const followed = scenario.prelude ? await scenario.prelude(story) : scenario.plan;
    let wake: () => void = () => undefined;
    watch = await watchRollout(kc, followed, () => wake());
    const outcome = await followRollout({
      scenario,
      plan: followed,
      watch,
      story,
      term,
      controller,
      timeoutMs: opts.timings === 'demo' ? 20 * 60_000 : 8 * 60_000,
      setWake: (w) => (wake = w),
    });
    term.close();
    printSummary(watch, [...before.keys()]);
    console.log(`report PR: ${await reportPr(lab, followed)}`);
    const wallSeconds = Math.round((Date.now() - started) / 1000);

    if (opts.keep) await keepUntilSignal(lab, plans, logPath);
    if (!outcome.ok) {
      console.log(`rollout did not complete: ${outcome.reason} (after ${wallSeconds} s)`);
      return 1;
    }
    console.log(`rollout completed; demo wall time ${wallSeconds} s (lab start included)`);
    return 0;
  } finally {
    watch?.stop();
    term.close();
    await stopAll();
  }
}

/** `kangal-patch run` as an operator starts it against the lab: Git delivery, the lab forge, the registry mirrors. */
function controllerArgs(lab: Lab, plans: PlansRepo, releasesFeed: boolean): string[] {
  return [
    '--kubeconfig',
    lab.cluster.kubeconfigPath,
    '--namespace',
    NAMESPACE,
    '--leader-elect',
    '--git-url',
    plans.cloneUrl,
    '--git-token-file',
    plans.tokenFile,
    '--forge',
    'github',
    '--forge-api-url',
    lab.forge.apiUrl,
    '--cluster-name',
    CLUSTER,
    '--poll-interval',
    '5s',
    '--registry-mirror',
    `ghcr.io=http://${lab.registry.host}`,
    '--registry-mirror',
    `factory.talos.dev=http://${lab.registry.host}`,
    // Loopback and any free port: the machine may run other labs.
    '--health-probe-bind-address',
    '127.0.0.1:0',
    '--metrics-bind-address',
    '127.0.0.1:0',
    // Auto-update templates read the Talos releases from the lab forge's siderolabs/talos.
    ...(releasesFeed ? ['--releases-api-url', lab.forge.apiUrl, '--releases-token-file', plans.tokenFile] : []),
  ];
}

/** --keep: the lab stays up, its addresses printed, until Ctrl-C or SIGTERM. */
async function keepUntilSignal(lab: Lab, plans: PlansRepo, logPath: string): Promise<void> {
  // Listening before printing: whoever reads the KUBECONFIG line may signal at once.
  const stopped = new Promise<void>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  printKeep(lab, plans.cloneUrl, plans.tokenFile, logPath);
  await stopped;
}

/** `kangal-patch status <plan>`'s summary table (versions before → after from the jobs and Nodes), and the nodes the plan left alone. */
function printSummary(watch: RolloutWatch, allNodes: readonly string[]): void {
  const nodes = statusDocument(watch.input(), Date.now()).plans[0]?.nodes ?? [];
  // On a terminal the last screen of the finished plan already ends with the table.
  if (!process.stdout.isTTY) {
    console.log('');
    for (const line of summaryTable(nodes, Infinity, '')) console.log(line);
  }
  const untouched = allNodes.filter((n) => !nodes.some((j) => j.node === n));
  if (untouched.length) console.log(`not selected by the plan (untouched): ${untouched.join(', ')}`);
}

/** What an operator installs before the controller: the CRDs, the namespace, the Talos credentials. */
async function installOperatorPrerequisites(
  lab: Lab,
  kubectl: (args: string[], quiet?: boolean) => Promise<void>,
): Promise<void> {
  await kubectl(['apply', '--server-side', '-k', join(repoRoot, 'kustomize/crd')], true);
  await kubectl(
    [
      'wait',
      '--for=condition=Established',
      'crd/patchjobs.kangalpatch.ozalp.dk',
      'crd/patchplans.kangalpatch.ozalp.dk',
    ],
    true,
  );
  await kubectl(['create', 'namespace', NAMESPACE], true);
  const data = Object.entries(lab.talos.secretData).map(
    ([k, v]) => `--from-literal=${k}=${Buffer.from(v, 'base64').toString('utf8')}`,
  );
  await kubectl(['-n', NAMESPACE, 'create', 'secret', 'generic', SECRET, ...data], true);
}

function storyContext(o: {
  lab: Lab;
  term: Terminal;
  kubectl: (args: string[]) => Promise<void>;
  kc: KubeConfig;
  plans: PlansRepo;
  controller: ManagedProcess;
}): StoryContext {
  return {
    lab: o.lab,
    cluster: CLUSTER,
    plans: o.plans,
    say: (l) => o.term.say(l),
    kubectl: o.kubectl,
    showPlan: (name, until, opts) => showPlanUntil({ ...o, name, until, ...opts }),
  };
}

/** Shows plan `name` live until `until` gives a value; fails after the timeout or when the controller exits. */
function showPlanUntil<T>(o: {
  kc: KubeConfig;
  term: Terminal;
  controller: ManagedProcess;
  name: string;
  until: (plan: PlanSnapshot) => T | undefined;
  timeoutMs: number;
  description: string;
}): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let watch: RolloutWatch | undefined;
    let done = false;
    const end = (settle: () => void): void => {
      if (done) return;
      done = true;
      clearTimeout(deadline);
      watch?.stop();
      settle();
    };
    const deadline = setTimeout(
      () =>
        end(() =>
          reject(
            new DemoFailure(
              `${o.description}: not within ${o.timeoutMs / 1000} s; last state: ${JSON.stringify(watch?.plan())}; controller log:\n${o.controller.tail(15)}`,
            ),
          ),
        ),
      o.timeoutMs,
    );
    void o.controller.exited.then((code) =>
      end(() => reject(new DemoFailure(`kangal-patch run exited (code ${String(code)}):\n${o.controller.tail(20)}`))),
    );
    const check = (): void => {
      if (!watch || done) return;
      const plan = watch.plan();
      o.term.show(watch.input());
      const value = plan && o.until(plan);
      if (value !== undefined) end(() => resolve(value));
    };
    watchRollout(o.kc, o.name, check).then(
      (w) => {
        if (done) return w.stop();
        watch = w;
        check();
      },
      (err: unknown) => end(() => reject(err instanceof Error ? err : new Error(String(err)))),
    );
  });
}

interface Outcome {
  ok: boolean;
  reason: string;
}

/** Redraws and lets the scenario react on every watch event, until the story is over, the controller dies or the deadline passes. */
async function followRollout(o: {
  scenario: Scenario;
  /** The plan whose rollout is followed: the pushed one, or the one the story led to. */
  plan: string;
  watch: RolloutWatch;
  story: StoryContext;
  term: Terminal;
  controller: { exited: Promise<number | null>; tail(lines?: number): string };
  timeoutMs: number;
  setWake(wake: () => void): void;
}): Promise<Outcome> {
  const appliedBy = Date.now() + 90_000;
  return new Promise<Outcome>((resolve) => {
    let reacting = false;
    let done = false;
    const finish = (outcome: Outcome): void => {
      if (done) return;
      done = true;
      clearTimeout(deadline);
      clearTimeout(applied);
      resolve(outcome);
    };
    const deadline = setTimeout(
      () =>
        finish({
          ok: false,
          reason: `not finished after ${o.timeoutMs / 60_000} minutes; last state: ${JSON.stringify(o.watch.plan())}`,
        }),
      o.timeoutMs,
    );
    // Honest about a build without the GitOps loop: the demo never applies the plan itself.
    const applied = setTimeout(() => {
      if (!o.watch.plan())
        finish({
          ok: false,
          reason: `the controller did not apply ${o.plan} from Git within 90 s: is the GitOps loop (kangal-patch run --git-url) in this build? controller log:\n${o.controller.tail(15)}`,
        });
    }, appliedBy - Date.now());
    void o.controller.exited.then((code) =>
      finish({ ok: false, reason: `kangal-patch run exited (code ${String(code)}):\n${o.controller.tail(20)}` }),
    );
    const step = async (): Promise<void> => {
      const plan = o.watch.plan();
      const jobs = o.watch.jobs();
      o.term.show(o.watch.input());
      if (!plan || done || reacting) return;
      reacting = true;
      try {
        await o.scenario.react?.(o.story, plan, jobs);
      } catch (err) {
        o.story.say(`the user's step failed: ${err instanceof Error ? err.message : String(err)}`);
      } finally {
        reacting = false;
      }
      const now = o.watch.plan();
      if (now && o.scenario.finished(now)) {
        o.term.show(o.watch.input());
        finish(outcomeOf(now));
      }
    };
    o.setWake(() => void step());
    void step();
  });
}

function outcomeOf(p: PlanSnapshot): Outcome {
  if (p.phase === 'Completed' && (p.failedNodes ?? 0) === 0) return { ok: true, reason: 'completed' };
  return {
    ok: false,
    reason: `plan ${p.phase ?? '?'}${p.reason ? ` (${p.reason})` : ''}: ${p.message ?? ''}; ${p.failedNodes ?? 0} node(s) failed`,
  };
}

/** The report PR's URL: the controller opened it when the rollout started. */
async function reportPr(lab: Lab, plan: string): Promise<string> {
  const url = await waitFor(() => findReportPr(lab.forge, CLUSTER, plan), {
    timeoutMs: 60_000,
    intervalMs: 1_000,
    description: 'the report PR',
  }).catch(() => undefined);
  return (
    url ??
    `none found (no pull request from kangal-patch/${CLUSTER}/report/${plan}-… within 60 s; see the controller log)`
  );
}

function printKeep(lab: Lab, cloneUrl: string, tokenFile: string, logPath: string): void {
  console.log('');
  console.log('--keep: everything stays up until Ctrl-C');
  console.log(`KUBECONFIG=${lab.cluster.kubeconfigPath}`);
  console.log(`  KUBECONFIG=${lab.cluster.kubeconfigPath} ${lab.cluster.kubectl} get patchplan,patchjob`);
  console.log(`plans repository: ${cloneUrl}`);
  console.log(`  the token is in ${tokenFile} (never in the URL); clone with it in a header:`);
  console.log(
    `  git -c http.extraHeader="Authorization: Basic $(printf 'x-access-token:%s' "$(cat ${tokenFile})" | base64 -w0)" clone ${cloneUrl}`,
  );
  console.log(`controller log: ${logPath}`);
  for (const [k, v] of Object.entries(lab.env))
    if (!['KUBECONFIG', 'GIT_URL', 'GIT_TOKEN_FILE'].includes(k)) console.log(`${k}=${v}`);
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    const e = err as { code?: string; exitCode?: number };
    if (typeof e.code === 'string' && e.code.startsWith('commander.')) process.exit(e.exitCode ?? 2);
    console.error(`demo: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  },
);
