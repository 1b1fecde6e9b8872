// The event stream of one COSI kind on one node, as cosi-project/runtime's in-memory collection keeps
// it (pkg/state/impl/inmem/collection.go): every change is an event at the next position, a streamed
// event carries the bookmark of its position, and a watch may start again after a bookmark while the
// event is still in the stream. A bookmark is 16 bytes: a cookie of the node's boot (machined's state
// is in memory, so a bookmark of an earlier boot is no longer valid) and the position, big-endian.
import { randomBytes } from 'node:crypto';
import { EventType } from '../../../proto/gen/v1alpha1/state.js';
import type { Resource } from '../../../proto/gen/v1alpha1/resource.js';
import type { SimResource } from './node.js';

export interface LoggedEvent {
  pos: number;
  eventType: EventType;
  id: string;
  /** The resource as the event carries it, encoded when the change happened (its version then). */
  resource: Resource;
}

/** How many events a kind keeps (upstream's collections keep up to thousands; the lab's tests need a few). */
const CAPACITY = 1000;

export class CollectionLog {
  private readonly cookie = randomBytes(8);
  private readonly events: LoggedEvent[] = [];
  private writePos = 0;

  constructor(
    /** The boot this stream belongs to. */
    readonly bootId: string,
    private last: ReadonlyMap<string, SimResource>,
  ) {}

  /** The position the next event gets: a watch starting now streams from here. */
  get position(): number {
    return this.writePos;
  }

  /** Appends the changes from the last snapshot to `now`: CREATED and UPDATED (the YAML changed) in its order, then DESTROYED. */
  refresh(now: ReadonlyMap<string, SimResource>, encode: (r: SimResource) => Resource): void {
    const publish = (eventType: EventType, r: SimResource): void => {
      this.events.push({ pos: this.writePos++, eventType, id: r.id, resource: encode(r) });
      if (this.events.length > CAPACITY) this.events.shift();
    };
    for (const [id, r] of now) {
      const before = this.last.get(id);
      if (!before) publish(EventType.CREATED, r);
      else if (before.yaml !== r.yaml) publish(EventType.UPDATED, r);
    }
    for (const [id, r] of this.last) if (!now.has(id)) publish(EventType.DESTROYED, r);
    this.last = now;
  }

  /** The events from position `pos` on; undefined when some of them have left the stream (a buffer overrun). */
  since(pos: number): LoggedEvent[] | undefined {
    const oldest = this.events[0]?.pos ?? this.writePos;
    if (pos < oldest) return undefined;
    return this.events.filter((e) => e.pos >= pos);
  }

  bookmark(pos: number): Buffer {
    const at = Buffer.alloc(8);
    at.writeBigUInt64BE(BigInt.asUintN(64, BigInt(pos)));
    return Buffer.concat([this.cookie, at]);
  }

  /**
   * Where a watch starting from `bookmark` streams from (the event after it), or undefined when the
   * bookmark is not this stream's (another boot, malformed) or its event has left the stream.
   * `pos` may be -1 (a BOOTSTRAPPED bookmark before any event) for a kind watch, as upstream allows.
   */
  resumeAfter(bookmark: Uint8Array): number | undefined {
    const b = Buffer.from(bookmark);
    if (b.length !== 16 || !b.subarray(0, 8).equals(this.cookie)) return undefined;
    const pos = Number(BigInt.asIntN(64, b.readBigUInt64BE(8)));
    const oldest = this.events[0]?.pos ?? this.writePos;
    if (pos < oldest - 1 || pos < -1 || pos >= this.writePos) return undefined;
    return pos + 1;
  }
}
