// Kubernetes Events (events.k8s.io/v1) about the objects we act on. Best effort: an Event that
// cannot be written is logged, never a reason to fail the work it describes, and never something
// the work waits for: like client-go's recorder, Events go out from a bounded queue in the
// background, so a slow apiserver does not add a round trip per Event to every pass.
import { V1MicroTime, type EventsV1Event, type V1ObjectReference } from '@kubernetes/client-node';
import { withTimeout, type OpContext } from '../runtime/context.js';
import type { LogFn } from '../runtime/log.js';
import { kubeCall } from './call.js';
import type { KubeClients } from './clients.js';
import type { EventInput, KubePort, ObjectRef } from './port.js';

const REPORTING_CONTROLLER = 'kangal-patch';
/** events.k8s.io/v1 rejects a note over 1 kB. */
const NOTE_MAX = 1024;

export interface EventSink {
  reportingInstance: string;
  log: LogFn;
}

/**
 * Events written at once; more wait in the queue. As many as the job queue's workers, which each
 * wrote theirs inline before: with 4, a 300-node rollout on a loaded apiserver ended with 200–270
 * Events still queued, lost when the controller stopped right after.
 */
export const EVENT_WRITES_IN_FLIGHT = 16;
/** Queued Events beyond this are dropped (client-go's broadcaster drops past 1,000 too). */
export const EVENT_QUEUE_MAX = 1_000;
const WRITE_TIMEOUT_MS = 30_000;

export type EmitEvent = KubePort['emitEvent'];

/** The port's emitEvent: Events through a bounded queue to the apiserver. */
export function eventEmitter(c: KubeClients, sink: EventSink): EmitEvent {
  return eventQueue((ctx, event) => emitEvent(c, sink, withTimeout(ctx, WRITE_TIMEOUT_MS), event), sink.log);
}

/**
 * Queues each Event for `write` with at most EVENT_WRITES_IN_FLIGHT writes in flight, and
 * returns a promise that settles once it was written or dropped. Reconcilers do not await it; tests do.
 */
export function eventQueue(write: EmitEvent, log: LogFn): EmitEvent {
  const waiting: (() => Promise<void>)[] = [];
  let inFlight = 0;
  let dropped = 0;
  const pump = (): void => {
    while (inFlight < EVENT_WRITES_IN_FLIGHT && waiting.length > 0) {
      const next = waiting.shift() as () => Promise<void>;
      inFlight++;
      void next().finally(() => {
        inFlight--;
        pump();
      });
    }
  };
  return (ctx, event) => {
    if (waiting.length >= EVENT_QUEUE_MAX) {
      // Logged once per hundred: a storm of drops must not become a storm of log lines.
      if (dropped++ % 100 === 0)
        log('warn', 'Event dropped: the queue of Events to write is full', {
          reason: event.reason,
          regarding: event.regarding.name,
          droppedSoFar: dropped,
        });
      return Promise.resolve();
    }
    return new Promise<void>((resolve) => {
      // The writes are not awaited by anyone: one that rejects after all must not become an unhandled rejection.
      const guarded = (): Promise<void> =>
        write(ctx, event).catch((err: unknown) =>
          log('warn', 'cannot write Event', {
            reason: event.reason,
            regarding: event.regarding.name,
            err: (err as Error).message,
          }),
        );
      waiting.push(() => guarded().finally(resolve));
      pump();
    });
  };
}

async function emitEvent(c: KubeClients, sink: EventSink, ctx: OpContext, event: EventInput): Promise<void> {
  if (ctx.signal.aborted) {
    sink.log('info', 'Event not written: the pass was cancelled', {
      reason: event.reason,
      regarding: event.regarding.name,
    });
    return;
  }
  // Cluster-scoped objects (Nodes, PatchJobs) have their Events in `default`, as kubectl expects.
  const namespace = event.regarding.namespace ?? 'default';
  const body: EventsV1Event = {
    metadata: { name: eventName(event.regarding.name, ctx.clock.now()), namespace },
    eventTime: new V1MicroTime(ctx.clock.now()),
    reportingController: REPORTING_CONTROLLER,
    reportingInstance: sink.reportingInstance,
    action: event.action,
    reason: event.reason,
    note: truncate(event.note, NOTE_MAX),
    type: event.type,
    regarding: reference(event.regarding),
    ...(event.related ? { related: reference(event.related) } : {}),
  };
  try {
    await kubeCall(ctx, `create Event ${event.reason} for ${event.regarding.kind} ${event.regarding.name}`, (o) =>
      c.events.createNamespacedEvent({ namespace, body }, o),
    );
  } catch (err) {
    // Shutdown or leader loss cancelled the pass after its status write: the Event is dropped on
    // purpose, which is not a failure to warn about.
    if (ctx.signal.aborted) {
      sink.log('info', 'Event not written: the pass was cancelled', {
        reason: event.reason,
        regarding: event.regarding.name,
      });
      return;
    }
    sink.log('warn', 'cannot write Event', {
      reason: event.reason,
      regarding: event.regarding.name,
      err: (err as Error).message,
    });
  }
}

/**
 * client-go's naming, `<object>.<hex time>` (the apiserver rejects a generateName ending in a dot);
 * random low digits keep two Events in the same millisecond apart.
 */
function eventName(object: string, nowMs: number): string {
  const nanos = BigInt(nowMs) * 1_000_000n + BigInt(Math.floor(Math.random() * 1_000_000));
  return `${object.slice(0, 200)}.${nanos.toString(16)}`;
}

function reference(ref: ObjectRef): V1ObjectReference {
  const out: V1ObjectReference = { apiVersion: ref.apiVersion, kind: ref.kind, name: ref.name };
  if (ref.uid) out.uid = ref.uid;
  if (ref.namespace) out.namespace = ref.namespace;
  return out;
}

function truncate(text: string, max: number): string {
  if (Buffer.byteLength(text) <= max) return text;
  // The ellipsis takes 3 bytes in UTF-8.
  let cut = text.slice(0, max - 3);
  while (Buffer.byteLength(cut) > max - 3) cut = cut.slice(0, -1);
  return `${cut}…`;
}
