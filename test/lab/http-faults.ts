// Malformed HTTP answers a lab peer can give instead of its real one: an HTML error page, JSON of
// the wrong shape, a wrong content type, a body far larger than any client should read. Used by the
// lab forge (forge/faults.ts), the registry's fault front and its token service (registry/).
import type { ServerResponse } from 'node:http';

export interface HttpFault {
  status: number;
  contentType: string;
  /** The body, or this many bytes of filler streamed in 64 KiB chunks (never held in memory). */
  body: string | { bytes: number };
}

export function serveFault(res: ServerResponse, fault: HttpFault): void {
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
