// `kangal-patch` command line. Exit codes: 0 all valid, 1 problems found, 2 usage errors (`status
// --watch` stopped by Ctrl-C: 130, by SIGTERM: 143).
import { Command, CommanderError, Option } from 'commander';
import { DEFAULT_OPERATOR_NAMESPACE } from '../schemas/api.js';
import type { PatchPlanDocument } from '../schemas/patchplan.js';
import { DEFAULT_LIMITS, formatProblem, loadPlanSources, type LoadedPlan, type Problem } from './gitops/load/index.js';
import { collectPlanFiles } from './gitops/load/files.js';
import { DEFAULT_HOOK_POLICY, registryEntry, type HookPolicy } from './core/hook-policy.js';
import { envName, RUN_FLAGS, resolveRunConfig, type RunConfig, type RunFlagName } from './config.js';
import { loadNotifyConfig } from './notify/config.js';
import { loadSigningKey, loadTrustedKeys } from './gitops/promotion/signature.js';
import { readWebhookSecret } from './gitops/webhook.js';
import { createLogger } from './telemetry/logger.js';
import { parseMirrorFlag, type RegistryMirrors } from './registry/index.js';
import { systemClock } from './runtime/clock.js';
import { rootContext } from './runtime/context.js';

export const ExitCode = { Ok: 0, Invalid: 1, Usage: 2, Interrupted: 130, Terminated: 143 } as const;
export type ExitCode = (typeof ExitCode)[keyof typeof ExitCode];

export interface CliIO {
  out: (text: string) => void;
  err: (text: string) => void;
}

const stdio: CliIO = {
  out: (t) => process.stdout.write(t),
  err: (t) => process.stderr.write(t),
};

interface ValidateOptions {
  output: 'text' | 'json';
  namespace: string;
}

async function validate(paths: string[], opts: ValidateOptions, io: CliIO): Promise<ExitCode> {
  const collected = await collectPlanFiles(paths, DEFAULT_LIMITS.maxBytes);
  if (collected.missing.length > 0) {
    io.err(collected.missing.map((p) => `kangal-patch validate: no such file or directory: ${p}\n`).join(''));
    return ExitCode.Usage;
  }
  const result = loadPlanSources(collected.sources, { operatorNamespace: opts.namespace });
  const problems: Problem[] = [...collected.problems, ...result.problems];
  if (opts.output === 'json') {
    io.out(`${JSON.stringify(problems, ['file', 'line', 'column', 'path', 'message'], 2)}\n`);
  } else {
    for (const p of problems) io.out(`${formatProblem(p)}\n`);
    const files = collected.sources.length;
    const summary = `${result.plans.length} plan(s) in ${files} file(s), ${problems.length} problem(s)`;
    io.err(`${problems.length === 0 ? 'ok' : 'invalid'}: ${summary}\n`);
  }
  return problems.length === 0 ? ExitCode.Ok : ExitCode.Invalid;
}

interface PreviewFlags {
  kubeconfig?: string;
  output: 'text' | 'json';
  namespace: string;
  registryMirror?: string[];
  controllerNode?: string;
  releasesApiUrl?: string;
  releasesTokenFile?: string;
  promotionKeysDir?: string;
  repo?: string;
  hookServiceAccounts?: string;
  hookPriorityClasses?: string;
  hookImageRegistries?: string;
}

/** The hook allowlists of preview's --hook-* flags, read as `run` reads its own. */
function previewHookPolicy(opts: PreviewFlags): HookPolicy | Error {
  const split = (text: string | undefined): string[] =>
    (text ?? '')
      .split(',')
      .map((p) => p.trim())
      .filter((p) => p !== '');
  const imageRegistries: string[] = [];
  for (const part of split(opts.hookImageRegistries)) {
    const entry = registryEntry(part);
    if (entry instanceof Error) return new Error(`--hook-image-registries: ${entry.message}`);
    imageRegistries.push(entry);
  }
  return {
    ...DEFAULT_HOOK_POLICY,
    serviceAccounts: split(opts.hookServiceAccounts),
    priorityClasses: split(opts.hookPriorityClasses),
    imageRegistries,
  };
}

/** The whole preview (cluster reads, Talos and registry checks) gives up after this long. */
const PREVIEW_TIMEOUT_MS = 120_000;

/** The registry mirrors of preview's --registry-mirror flags. */
function previewMirrors(flags: readonly string[] | undefined): RegistryMirrors | Error {
  const mirrors: RegistryMirrors = {};
  for (const flag of flags ?? []) {
    const m = parseMirrorFlag(flag);
    if (m instanceof Error) return new Error(`--registry-mirror: ${m.message}`);
    mirrors[m.host] = m.url;
  }
  return mirrors;
}

/** Why a file gives no plan to preview, and the exit code that says so. */
interface NoPlan {
  why: string;
  code: ExitCode;
}

/** The one PatchPlan of the file to preview; else why not (a file's problems are printed first). */
async function onePlan(path: string, namespace: string, io: CliIO): Promise<LoadedPlan | NoPlan> {
  const collected = await collectPlanFiles([path], DEFAULT_LIMITS.maxBytes);
  if (collected.missing.length > 0) return { why: `no such file or directory: ${path}`, code: ExitCode.Usage };
  const result = loadPlanSources(collected.sources, { operatorNamespace: namespace });
  const problems = [...collected.problems, ...result.problems];
  if (problems.length > 0) {
    io.out(problems.map((p) => `${formatProblem(p)}\n`).join(''));
    return {
      why: `${path} is not valid (${problems.length} problem(s)); fix it first (kangal-patch validate ${path})`,
      code: ExitCode.Invalid,
    };
  }
  const [loaded, ...more] = result.plans;
  if (!loaded) return { why: `${path} holds no PatchPlan`, code: ExitCode.Invalid };
  if (more.length > 0)
    return {
      why: `${path} holds ${result.plans.length} PatchPlans (${result.plans.map((p) => p.plan.metadata.name).join(', ')}): preview one plan per file`,
      code: ExitCode.Usage,
    };
  return loaded;
}

async function preview(path: string, opts: PreviewFlags, io: CliIO): Promise<ExitCode> {
  const fail = (text: string, code: ExitCode): ExitCode => {
    io.err(`kangal-patch preview: ${text}\n`);
    return code;
  };
  const mirrors = previewMirrors(opts.registryMirror);
  if (mirrors instanceof Error) return fail(mirrors.message, ExitCode.Usage);
  const hookPolicy = previewHookPolicy(opts);
  if (hookPolicy instanceof Error) return fail(hookPolicy.message, ExitCode.Usage);
  const loaded = await onePlan(path, opts.namespace, io);
  if ('why' in loaded) return fail(loaded.why, loaded.code);
  if (loaded.plan.spec.target.autoUpdate?.enabled) return previewTemplateFile(loaded, opts, io, fail);
  const { previewPlan } = await import('./preview/run.js');
  const { formatPreviewJson, formatPreviewText } = await import('./preview/format.js');
  const shutdown = new AbortController();
  try {
    const report = await previewPlan(rootContext(systemClock, shutdown.signal, PREVIEW_TIMEOUT_MS), loaded, {
      kubeconfig: opts.kubeconfig,
      operatorNamespace: opts.namespace,
      registryMirrors: mirrors,
      controllerNode: opts.controllerNode,
      hookPolicy,
      releasesApiUrl: opts.releasesApiUrl,
      releasesTokenFile: opts.releasesTokenFile,
    });
    io.out(opts.output === 'json' ? formatPreviewJson(report) : formatPreviewText(report));
    return report.preflight.checks.every((c) => c.passed) ? ExitCode.Ok : ExitCode.Invalid;
  } catch (err) {
    return fail(err instanceof Error ? err.message : String(err), ExitCode.Invalid);
  } finally {
    shutdown.abort();
  }
}

/** An auto-update template: what it would propose now and why not a newer release (exit 0). */
async function previewTemplateFile(
  loaded: { file: string; plan: PatchPlanDocument },
  opts: PreviewFlags,
  io: CliIO,
  fail: (text: string, code: ExitCode) => ExitCode,
): Promise<ExitCode> {
  const { previewTemplate, formatTemplatePreview } = await import('./gitops/template-preview.js');
  const shutdown = new AbortController();
  try {
    const p = await previewTemplate(rootContext(systemClock, shutdown.signal, PREVIEW_TIMEOUT_MS), loaded, {
      kubeconfig: opts.kubeconfig,
      operatorNamespace: opts.namespace,
      controllerNode: opts.controllerNode,
      releasesApiUrl: opts.releasesApiUrl,
      releasesTokenFile: opts.releasesTokenFile,
      promotionKeysDir: opts.promotionKeysDir,
      repo: opts.repo,
    });
    io.out(opts.output === 'json' ? `${JSON.stringify(p, null, 2)}\n` : formatTemplatePreview(p));
    return ExitCode.Ok;
  } catch (err) {
    return fail(err instanceof Error ? err.message : String(err), ExitCode.Invalid);
  } finally {
    shutdown.abort();
  }
}

interface StatusOptions {
  watch?: boolean;
  output: 'text' | 'wide' | 'json' | 'yaml';
  kubeconfig?: string;
  context?: string;
}

async function status(plans: string[], opts: StatusOptions, io: CliIO): Promise<ExitCode> {
  const { runStatus } = await import('./status/command.js');
  const own = io === stdio;
  const code = (await runStatus(plans, opts, {
    out: io.out,
    err: io.err,
    terminal: own ? process.stdout : undefined,
  })) as ExitCode;
  // Idle keep-alive connections to the apiserver must not hold a finished command open.
  if (own) setTimeout(() => process.exit(code), 2_000).unref();
  return code;
}

export function buildProgram(io: CliIO, setExit: (code: ExitCode) => void): Command {
  const program = new Command('kangal-patch')
    .description('Rolling Talos Linux and Kubernetes upgrades, driven from Git')
    .exitOverride()
    .configureOutput({ writeOut: io.out, writeErr: io.err });
  program
    .command('validate')
    .description('Validate PatchPlan files (files or directories, *.yaml/*.yml, searched recursively)')
    .argument('<paths...>', 'plan files or directories')
    .addOption(new Option('-o, --output <format>', 'output format').choices(['text', 'json']).default('text'))
    .option(
      '-n, --namespace <namespace>',
      'operator namespace (talosConfig.secretRef.namespace must match)',
      DEFAULT_OPERATOR_NAMESPACE,
    )
    .exitOverride()
    .action(async (paths: string[], opts: ValidateOptions) => setExit(await validate(paths, opts, io)));
  program
    .command('preview')
    .description(
      'Print the rollout a plan file would do on the live cluster, changing nothing (exit 1 when a preflight check fails)',
    )
    .argument('<plan>', 'a PatchPlan file')
    .option('--kubeconfig <path>', 'kubeconfig (default: in-cluster, $KUBECONFIG, ~/.kube/config)')
    .addOption(new Option('-o, --output <format>', 'output format').choices(['text', 'json']).default('text'))
    .option(
      '-n, --namespace <namespace>',
      'operator namespace (where the Talos credentials Secret lives)',
      DEFAULT_OPERATOR_NAMESPACE,
    )
    .option(
      '--registry-mirror <host=url...>',
      'check installer images of a registry at a mirror, as `run` does (repeatable)',
    )
    .option(
      '--controller-node <name>',
      'the node the controller runs on (scheduled last in its group)',
      process.env.NODE_NAME,
    )
    .option(
      '--releases-api-url <url>',
      "auto-update templates and stepwise paths: the GitHub REST API listing siderolabs/talos releases (default https://api.github.com; a path falls back to the installer registry's tags)",
    )
    .option('--releases-token-file <path>', 'auto-update templates and stepwise paths: a token for the releases API')
    .option(
      '--promotion-keys-dir <dir>',
      "templates with autoUpdate.promotion: the upstream clusters' public keys (<cluster>.pem)",
    )
    .option(
      '--repo <dir>',
      'templates with autoUpdate.promotion: the checkout holding status/ (default: the nearest folder above the file with .git)',
    )
    .option(
      '--hook-service-accounts <names>',
      'as `run`: ServiceAccounts hooks may run as (comma-separated), for the HookAdmission check',
    )
    .option('--hook-priority-classes <names>', 'as `run`: PriorityClasses hooks may ask for (comma-separated)')
    .option(
      '--hook-image-registries <registries>',
      'as `run`: registries hook images must come from (comma-separated; default any)',
    )
    .exitOverride()
    .action(async (path: string, opts: PreviewFlags) => setExit(await preview(path, opts, io)));
  program
    .command('status')
    .description(
      'Show PatchPlans and their rollouts (read-only, your own credentials): phase, what each waits for, a bar per group, active and failed nodes, the summary table; --watch follows them until they end (exit 0 all Completed, 1 one Failed)',
    )
    .argument('[plans...]', 'PatchPlan names (default: every plan, newest first)')
    .option(
      '-w, --watch',
      'follow the watches until every plan shown has finished; redraws in place on a terminal, prints timestamped changes otherwise',
      false,
    )
    .addOption(
      new Option(
        '-o, --output <format>',
        'output format (json and yaml: one document, described in docs/rollout.md "Watching a rollout")',
      )
        .choices(['text', 'wide', 'json', 'yaml'])
        .default('text'),
    )
    .option('--kubeconfig <path>', 'kubeconfig (default: in-cluster, $KUBECONFIG, ~/.kube/config)')
    .option('--context <name>', 'the kubeconfig context to use (default: its current context)')
    .exitOverride()
    .action(async (plans: string[], opts: StatusOptions) => setExit(await status(plans, opts, io)));
  const runCommand = program
    .command('run')
    .description(`Run the controller (every flag also reads KANGAL_PATCH_<FLAG>, e.g. KANGAL_PATCH_NAMESPACE)`)
    .exitOverride()
    .action(async (opts: Partial<Record<RunFlagName, string | boolean | string[]>>) => setExit(await run(opts, io)));
  for (const def of Object.values(RUN_FLAGS))
    runCommand.option(def.flag, `${def.help}${def.default === undefined ? '' : ` (default ${def.default})`}`);
  return program;
}

async function run(flags: Partial<Record<RunFlagName, string | boolean | string[]>>, io: CliIO): Promise<ExitCode> {
  const cfg = resolveRunConfig(flags, process.env);
  if ('errors' in cfg) {
    io.err(cfg.errors.map((e) => `kangal-patch run: ${e}\n`).join(''));
    return ExitCode.Usage;
  }
  if (cfg.notifyConfigFile !== undefined) {
    const notify = await loadNotifyConfig(cfg.notifyConfigFile);
    if ('errors' in notify) {
      io.err(
        notify.errors
          .map((e) => `kangal-patch run: --notify-config-file (${envName('notifyConfigFile')}): ${e}\n`)
          .join(''),
      );
      return ExitCode.Usage;
    }
    cfg.notify = notify;
  }
  const keys = [...(await loadPromotionKeys(cfg)), ...(await checkWebhookSecret(cfg))];
  if (keys.length > 0) {
    io.err(keys.map((e) => `kangal-patch run: ${e}\n`).join(''));
    return ExitCode.Usage;
  }
  const log = createLogger(cfg.logLevel);
  const shutdown = new AbortController();
  const stop = (signal: string): void => {
    log.info({ signal }, 'signal received');
    shutdown.abort(new Error(signal));
  };
  process.once('SIGTERM', () => stop('SIGTERM'));
  process.once('SIGINT', () => stop('SIGINT'));
  process.on('unhandledRejection', (err) => {
    log.fatal({ err: err instanceof Error ? err.message : String(err) }, 'unhandled rejection');
    process.exit(1);
  });
  const { runController } = await import('./main.js');
  try {
    const code = await runController(cfg, log, shutdown.signal);
    // Anything still holding the event loop open must not keep a stopped controller alive.
    setTimeout(() => process.exit(code), 2_000).unref();
    return code === 0 ? ExitCode.Ok : ExitCode.Invalid;
  } catch (err) {
    log.fatal({ err: err instanceof Error ? err.message : String(err) }, 'controller failed');
    return ExitCode.Invalid;
  }
}

/** Runs the CLI with `argv` (without node and script) and returns the exit code. */
export async function main(argv: readonly string[], io: CliIO = stdio): Promise<ExitCode> {
  let code: ExitCode = ExitCode.Ok;
  const program = buildProgram(io, (c) => (code = c));
  try {
    await program.parseAsync([...argv], { from: 'user' });
  } catch (e) {
    if (!(e instanceof CommanderError)) throw e;
    // --help and --version end through here too, with exit code 0.
    return e.exitCode === 0 ? ExitCode.Ok : ExitCode.Usage;
  }
  return code;
}

/** --report-signing-key-file and --promotion-keys-dir, read into cfg at start; the errors name the flag. */
/** A served webhook's secret must be usable from the start (it is re-read per delivery, for rotation). */
async function checkWebhookSecret(cfg: RunConfig): Promise<string[]> {
  if (cfg.webhookBindAddress === undefined || cfg.webhookSecretFile === undefined) return [];
  const secret = await readWebhookSecret(cfg.webhookSecretFile);
  return secret instanceof Error ? [`--webhook-secret-file (${envName('webhookSecretFile')}): ${secret.message}`] : [];
}

async function loadPromotionKeys(cfg: RunConfig): Promise<string[]> {
  const errors: string[] = [];
  if (cfg.reportSigningKeyFile !== undefined) {
    const key = await loadSigningKey(cfg.reportSigningKeyFile);
    if (key instanceof Error)
      errors.push(`--report-signing-key-file (${envName('reportSigningKeyFile')}): ${key.message}`);
    else cfg.reportSigningKey = key;
  }
  if (cfg.promotionKeysDir !== undefined) {
    const trusted = await loadTrustedKeys(cfg.promotionKeysDir);
    errors.push(...trusted.errors.map((e) => `--promotion-keys-dir (${envName('promotionKeysDir')}): ${e}`));
    cfg.trustedKeys = trusted.keys;
  }
  return errors;
}
