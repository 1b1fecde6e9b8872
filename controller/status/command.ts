// `kangal-patch status [PLAN...] [--watch] [-o text|wide|json|yaml] [--kubeconfig] [--context]`,
// the imperative shell around core/status-view: connect with the viewer's credentials, check what
// can be read, list and watch plans, jobs and nodes, print. Read-only.
//
// Exit codes: 0 printed (one shot) or every plan shown ended Completed without a failed node
// (--watch); 1 a problem (unknown plan, no CRDs, forbidden, unreachable), or a plan shown ended
// Failed or Cancelled, or with a failed node, or was deleted; 130 Ctrl-C, 143 SIGTERM.
import {
  missingPlans,
  renderStatus,
  statusDocument,
  viewerZone,
  type OutputFormat,
  type StatusPlanInput,
} from '../core/status-view/index.js';
import type { LogFn } from '../runtime/log.js';
import { rootContext } from '../runtime/context.js';
import { systemClock } from '../runtime/clock.js';
import { checkAccess } from './access.js';
import { connect, StatusError } from './connect.js';
import { documentDisplay, plainDisplay, terminalDisplay, type Display } from './displays.js';
import { openSource, type StatusSource } from './source.js';
import { watchPlans, type WatchEnd } from './watch.js';

export interface StatusFlags {
  watch?: boolean;
  output: OutputFormat;
  kubeconfig?: string;
  context?: string;
}

export interface StatusIO {
  out: (text: string) => void;
  err: (text: string) => void;
  /** stdout when it is the process's own: a terminal gets the live view, its width and resizes. */
  terminal?: NodeJS.WriteStream | undefined;
}

const INTERRUPTED = { SIGINT: 130, SIGTERM: 143 } as const;
/** Discovery and access reviews before the first list. */
const CHECK_TIMEOUT_MS = 30_000;

/** The viewer's time zone, as their system has it. */
const localZone = (): string => viewerZone(process.env['TZ'] || Intl.DateTimeFormat().resolvedOptions().timeZone);

/** Characters per line: the terminal's, else $COLUMNS, else no limit (a file or a pipe). */
function widthOf(io: StatusIO): number {
  if (io.terminal?.isTTY) return Math.max(20, (io.terminal.columns || 80) - 1);
  const columns = Number(process.env['COLUMNS']);
  return Number.isFinite(columns) && columns > 0 ? columns : Infinity;
}

function unknownPlans(missing: readonly string[], plans: readonly StatusPlanInput[]): StatusError {
  const have = plans.map((p) => p.name).sort();
  const list = have.length === 0 ? 'there are no PatchPlans' : `the PatchPlans are: ${have.join(', ')}`;
  return new StatusError(`no PatchPlan named ${missing.join(', ')}; ${list}`);
}

function displayFor(flags: StatusFlags, io: StatusIO, zone: string): Display {
  const options = { wide: flags.output === 'wide', zone, now: () => Date.now() };
  if (flags.output === 'json' || flags.output === 'yaml') return documentDisplay(io.out, flags.output, options);
  if (io.terminal?.isTTY) return terminalDisplay(io.terminal, options);
  return plainDisplay(io.out, widthOf(io), options);
}

const END_CODE: Record<WatchEnd['kind'], number> = { completed: 0, failed: 1, deleted: 1, stopped: 1 };

/** Follows the plans until they end or a signal comes; the terminal is restored on every way out. */
async function watch(
  source: StatusSource,
  names: readonly string[],
  flags: StatusFlags,
  io: StatusIO,
): Promise<number> {
  const stop = new AbortController();
  let signalled: keyof typeof INTERRUPTED | undefined;
  const onSignal = (s: keyof typeof INTERRUPTED) => (): void => {
    signalled = s;
    stop.abort();
  };
  const handlers = { SIGINT: onSignal('SIGINT'), SIGTERM: onSignal('SIGTERM') };
  for (const [s, h] of Object.entries(handlers)) process.once(s, h);
  // A reader that went away (`| head`) ends the watch instead of crashing on EPIPE.
  const onError = (): void => stop.abort();
  io.terminal?.on('error', onError);
  const display = displayFor(flags, io, localZone());
  let end: WatchEnd;
  try {
    end = await watchPlans({ source, names, display, signal: stop.signal, now: () => Date.now() });
  } finally {
    display.close();
    for (const [s, h] of Object.entries(handlers)) process.off(s, h);
    io.terminal?.off('error', onError);
  }
  if (end.kind === 'deleted') io.err(`kangal-patch status: PatchPlan ${end.names.join(', ')} was deleted\n`);
  return signalled ? INTERRUPTED[signalled] : END_CODE[end.kind];
}

export async function runStatus(names: readonly string[], flags: StatusFlags, io: StatusIO): Promise<number> {
  const shutdown = new AbortController();
  let lastWarning: string | undefined;
  const log: LogFn = (level, message, fields) => {
    const err = fields?.['err'];
    if (level === 'warn' || level === 'error') lastWarning = `${message}${typeof err === 'string' ? ` (${err})` : ''}`;
  };
  try {
    const kube = connect({ kubeconfig: flags.kubeconfig, context: flags.context, log });
    const access = await checkAccess(
      rootContext(systemClock, shutdown.signal, CHECK_TIMEOUT_MS),
      kube,
      flags.watch === true,
    );
    const source = await openSource(kube, access, shutdown.signal, () => lastWarning);
    const first = source.input(names);
    const missing = missingPlans(first);
    if (missing.length > 0) throw unknownPlans(missing, first.plans);
    if (flags.watch) return await watch(source, names, flags, io);
    const nowMs = Date.now();
    io.out(renderStatus(statusDocument(first, nowMs), flags.output, { width: widthOf(io), zone: localZone(), nowMs }));
    return 0;
  } catch (err) {
    if (!(err instanceof StatusError)) throw err;
    io.err(`kangal-patch status: ${err.message}\n`);
    return 1;
  } finally {
    shutdown.abort();
  }
}
