// Malformed answers the lab forge can give instead of its REST API: an HTML error page, JSON of
// the wrong shape, a body far larger than any client should read. Git requests are never touched.
// With `afterHandling` the request is carried out first (a pull request is created) and only its
// answer is replaced: a peer that did the work and garbled the reply, which a client must not
// take as "nothing happened" and repeat.
import type { ServerResponse } from 'node:http';

export interface ForgeFault {
  /** REST requests whose path (without the query) matches get this answer. */
  path: RegExp;
  /** Only requests with this method (default: any). */
  method?: string;
  /** Carry the request out as usual, then answer with the fault instead of the real answer. */
  afterHandling?: boolean;
  /** Serve the fault this many times, then answer normally again (default: until replaced). */
  times?: number;
  status: number;
  contentType: string;
  /** The body, or this many bytes of filler streamed in 64 KiB chunks (never held in memory). */
  body: string | { bytes: number };
}

export function serveFault(res: ServerResponse, fault: ForgeFault): void {
  res.writeHead(fault.status, { 'content-type': fault.contentType });
  if (typeof fault.body === 'string') {
    res.end(fault.body);
    return;
  }
  const chunk = Buffer.alloc(64 * 1024, '[');
  let left = fault.body.bytes;
  const pump = (): void => {
    while (left > 0) {
      const piece = left >= chunk.length ? chunk : chunk.subarray(0, left);
      left -= piece.length;
      // Respect backpressure; a client that stops reading closes the socket and ends the pump.
      if (!res.write(piece)) {
        res.once('drain', pump);
        return;
      }
    }
    res.end();
  };
  res.on('close', () => (left = 0));
  pump();
}

/**
 * `res` with the real answer swallowed: whatever the handler writes is dropped, and when it ends
 * the fault's answer goes out instead.
 */
export function answeredWithFault(res: ServerResponse, fault: ForgeFault): ServerResponse {
  // Own properties shadow ServerResponse's methods until the handler ends; deleting them restores those.
  const swallow = {
    writeHead: () => res,
    setHeader: () => res,
    write: () => true,
    end: () => {
      for (const name of Object.keys(swallow)) Reflect.deleteProperty(res, name);
      serveFault(res, fault);
      return res;
    },
  };
  return Object.assign(res, swallow);
}
