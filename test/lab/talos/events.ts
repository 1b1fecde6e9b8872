// machined's runtime event stream, as MachineService.Events serves it: an in-memory ring buffer of
// the node's events since it booted (internal/app/machined/pkg/runtime/v1alpha1/v1alpha1_events.go),
// each with an xid ID (github.com/rs/xid: time-ordered, 20 base32hex characters), the payload as a
// google.protobuf.Any of type `talos/runtime/<full proto name>`, and the actor ID of the API call
// that caused it (internal/app/machined/pkg/runtime/events.go NewEvent, ToMachineEvent).
import { EventEmitter } from 'node:events';
import { randomBytes } from 'node:crypto';
import { status as GrpcStatus } from '@grpc/grpc-js';
import type { Event, EventsRequest } from '../../../proto/gen/machine/machine.js';
import { RpcError } from './node.js';

/** machined keeps this many events (v1alpha1.NewEvents capacity). */
const CAPACITY = 1000;

const XID_ALPHABET = '0123456789abcdefghijklmnopqrstuv';
const XID_MACHINE = randomBytes(3);
const XID_PID = process.pid & 0xffff;
let xidCounter = randomBytes(3).readUIntBE(0, 3);

/** 12 bytes as 20 base32hex characters, most significant bits first (xid's encoding; 4 zero bits pad the end). */
function encodeXid(bytes: Buffer): string {
  let bits = 0n;
  for (const b of bytes) bits = (bits << 8n) | BigInt(b);
  bits <<= 4n;
  let out = '';
  for (let i = 19; i >= 0; i--) out += XID_ALPHABET[Number((bits >> BigInt(i * 5)) & 31n)];
  return out;
}

/** A new xid for `at`: 4 bytes of Unix seconds, 3 of machine ID, 2 of PID, 3 of counter. */
function newXid(at = new Date()): string {
  const b = Buffer.alloc(12);
  b.writeUInt32BE(Math.floor(at.getTime() / 1000) >>> 0, 0);
  XID_MACHINE.copy(b, 4);
  b.writeUInt16BE(XID_PID, 7);
  xidCounter = (xidCounter + 1) % 0x1000000;
  b.writeUIntBE(xidCounter, 9, 3);
  return encodeXid(b);
}

/** xid.FromString: 20 characters of the alphabet, the last one's padding bits zero; else "xid: invalid ID". */
function validXid(id: string): boolean {
  if (id.length !== 20 || [...id].some((ch) => !XID_ALPHABET.includes(ch))) return false;
  return XID_ALPHABET.indexOf(id[19] ?? '') % 16 === 0;
}

export interface RuntimeEvent {
  id: string;
  at: Date;
  /** Full proto name of the payload, e.g. `machine.SequenceEvent`. */
  type: string;
  value: Uint8Array;
  actorId: string;
}

/** The wire form (ToMachineEvent): data = Any{`talos/runtime/<type>`, payload}, id, actor_id; no metadata. */
export function toMachineEvent(e: RuntimeEvent): Event {
  return {
    metadata: undefined,
    data: { typeUrl: e.type === '' ? '' : `talos/runtime/${e.type}`, value: Buffer.from(e.value) },
    id: e.id,
    actorId: e.actorId,
  };
}

/**
 * The hello event Events sends before anything else (v1alpha1_server.go sendEmptyEvent:
 * NewEvent(nil, with_actor_id)): an empty type URL and payload, a fresh ID, the requested actor ID.
 */
export function helloEvent(actorId: string): Event {
  return toMachineEvent({ id: newXid(), at: new Date(), type: '', value: new Uint8Array(), actorId });
}

/**
 * Which past events a watch starts with (runtime/events.go WatchOptions; the options are applied in
 * the order tail_events, tail_id, tail_seconds and only one may be set): tail_events > 0 the last
 * that many, < 0 all; tail_id those after that ID; tail_seconds those of the last that many seconds;
 * none otherwise. Errors as the Events handler returns them (UNKNOWN).
 */
function tailOf(req: EventsRequest, events: readonly RuntimeEvent[], now: number): RuntimeEvent[] {
  if (req.tailId !== '' && req.tailEvents !== 0)
    throw new RpcError(
      GrpcStatus.UNKNOWN,
      "WithTailID can't be specified at the same time with WithTailEvents or WithTailDuration",
    );
  if (req.tailSeconds !== 0 && (req.tailEvents !== 0 || req.tailId !== ''))
    throw new RpcError(
      GrpcStatus.UNKNOWN,
      "WithTailDuration can't be specified at the same time with WithTailEvents or WithTailID",
    );
  if (req.tailEvents !== 0) return req.tailEvents < 0 ? [...events] : events.slice(-req.tailEvents);
  if (req.tailId !== '') return events.filter((e) => e.id > req.tailId);
  if (req.tailSeconds !== 0) return events.filter((e) => e.at.getTime() >= now - req.tailSeconds * 1000);
  return [];
}

/** One boot's event stream: published events in order, the last CAPACITY kept, watchers told of each. */
export class EventLog {
  private readonly events: RuntimeEvent[] = [];
  private readonly bus = new EventEmitter();

  constructor() {
    this.bus.setMaxListeners(0);
  }

  publish(type: string, value: Uint8Array, actorId = ''): RuntimeEvent {
    const at = new Date();
    const e: RuntimeEvent = { id: newXid(at), at, type, value, actorId };
    this.events.push(e);
    if (this.events.length > CAPACITY) this.events.shift();
    this.bus.emit('event', e);
    return e;
  }

  all(): readonly RuntimeEvent[] {
    return this.events;
  }

  /**
   * A watch as Events runs it: the tail the request asks for, then every new event, those of
   * `with_actor_id` only when it is set. `send` gets them in order; the returned function stops it.
   */
  watch(req: EventsRequest, send: (e: RuntimeEvent) => void): () => void {
    if (req.tailId !== '' && !validXid(req.tailId))
      throw new RpcError(GrpcStatus.UNKNOWN, 'error parsing tail_id: xid: invalid ID');
    const wanted = (e: RuntimeEvent): boolean => req.withActorId === '' || e.actorId === req.withActorId;
    for (const e of tailOf(req, this.events, Date.now())) if (wanted(e)) send(e);
    const onEvent = (e: RuntimeEvent): void => {
      if (wanted(e)) send(e);
    };
    this.bus.on('event', onEvent);
    return () => this.bus.off('event', onEvent);
  }

  /** Stops every watch (the process that served them is gone). */
  close(): void {
    this.bus.removeAllListeners();
  }
}
