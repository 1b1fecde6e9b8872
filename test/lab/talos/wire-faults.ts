// Malformed answers on the wire, whatever node a call is for: a method's responses truncated,
// oversized past the client's receive limit, or empty (every field missing). Applied in the
// response serializer, so the handler runs (and records the call) as usual.
import type * as grpc from '@grpc/grpc-js';

/** Past the product's 32 MiB receive limit (controller/talos/channels.ts), as a runaway peer would be. */
const OVERSIZED = 33 * 1024 * 1024;

export type WireFault = 'truncated' | 'oversized' | 'empty';

/** Field 2047, length-delimited: a field no Talos message declares, so only its size matters. */
const UNKNOWN_FIELD_TAG = Buffer.from([0xfa, 0x7f]);

function varint(n: number): Buffer {
  const out: number[] = [];
  for (let v = n; ; v = Math.floor(v / 128)) {
    if (v < 128) {
      out.push(v);
      return Buffer.from(out);
    }
    out.push((v % 128) | 0x80);
  }
}

function damage(bytes: Buffer, fault: WireFault): Buffer {
  if (fault === 'truncated') return bytes.subarray(0, Math.max(1, Math.floor(bytes.length / 2)));
  if (fault === 'empty') return Buffer.alloc(0);
  const filler = Buffer.alloc(OVERSIZED, 0x41);
  return Buffer.concat([bytes, UNKNOWN_FIELD_TAG, varint(filler.length), filler]);
}

/** The service with each method's serializer consulting `faults` (method path → fault) per response. */
export function withWireFaults<S extends grpc.ServiceDefinition>(
  service: S,
  faults: ReadonlyMap<string, WireFault>,
): S {
  const out: Record<string, grpc.MethodDefinition<unknown, unknown>> = {};
  for (const [name, method] of Object.entries(service) as [string, grpc.MethodDefinition<unknown, unknown>][]) {
    out[name] = {
      ...method,
      responseSerialize: (value: unknown) => {
        const bytes = method.responseSerialize(value);
        const fault = faults.get(method.path);
        return fault ? damage(bytes, fault) : bytes;
      },
    };
  }
  return out as S;
}
