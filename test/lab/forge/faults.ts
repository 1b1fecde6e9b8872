// Malformed answers the lab forge can give instead of its REST API: an HTML error page, JSON of
// the wrong shape, a body far larger than any client should read. Git requests are never touched.
// With `afterHandling` the request is carried out first (a pull request is created) and only its
// answer is replaced: a peer that did the work and garbled the reply, which a client must not
// take as "nothing happened" and repeat.
import type { ServerResponse } from 'node:http';
import { type HttpFault, serveFault } from '../http-faults.js';

export { serveFault };

export interface ForgeFault extends HttpFault {
  /** REST requests whose path (without the query) matches get this answer. */
  path: RegExp;
  /** Only requests with this method (default: any). */
  method?: string;
  /** Carry the request out as usual, then answer with the fault instead of the real answer. */
  afterHandling?: boolean;
  /** Serve the fault this many times, then answer normally again (default: until replaced). */
  times?: number;
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
