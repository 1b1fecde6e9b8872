// A webhook receiver on loopback for notification tests: records every delivery (headers, raw body,
// arrival time) and answers each one as the test says: a status (with headers such as Retry-After),
// or a stall that never answers until the test releases it or the receiver stops.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

interface Delivery {
  path: string;
  headers: Record<string, string>;
  body: string;
  /** Epoch milliseconds when the body was read. */
  at: number;
  /** The answer it got ('stall': none while it was recorded). */
  answer: number | 'stall';
}

type Answer = { status: number; headers?: Record<string, string> } | 'stall';

export interface WebhookReceiver {
  /** `http://127.0.0.1:<port><path>` */
  url(path?: string): string;
  readonly deliveries: readonly Delivery[];
  /** Answers for the next deliveries, in order; once used up, `fallback` answers. */
  answerNext(...answers: Answer[]): void;
  /** The answer once the queue of `answerNext` is empty (default 200). */
  setFallback(answer: Answer): void;
  /** Answers every stalled request with 200 now. */
  releaseStalled(): void;
  /** Parsed JSON bodies of the deliveries so far. */
  bodies(): Record<string, unknown>[];
  stop(): Promise<void>;
}

export async function startWebhookReceiver(): Promise<WebhookReceiver> {
  const deliveries: Delivery[] = [];
  const queue: Answer[] = [];
  let fallback: Answer = { status: 200 };
  const stalled = new Set<ServerResponse>();
  const sockets = new Set<Socket>();

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const chunks: Buffer[] = [];
    for await (const chunk of req as AsyncIterable<Buffer>) chunks.push(chunk);
    const answer = queue.shift() ?? fallback;
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string') headers[k] = v;
    deliveries.push({
      path: req.url ?? '/',
      headers,
      body: Buffer.concat(chunks).toString('utf8'),
      at: Date.now(),
      answer: answer === 'stall' ? 'stall' : answer.status,
    });
    if (answer === 'stall') {
      stalled.add(res);
      res.on('close', () => stalled.delete(res));
      return;
    }
    res.writeHead(answer.status, { 'content-type': 'text/plain', ...answer.headers });
    res.end('ok\n');
  };
  const server = createServer((req, res) => {
    handle(req, res).catch(() => res.destroy());
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  return {
    url: (path = '/hook') => `http://127.0.0.1:${port}${path}`,
    deliveries,
    answerNext: (...answers) => {
      queue.push(...answers);
    },
    setFallback: (answer) => {
      fallback = answer;
    },
    releaseStalled: () => {
      for (const res of stalled) {
        res.writeHead(200);
        res.end('ok\n');
      }
      stalled.clear();
    },
    bodies: () => deliveries.map((d) => JSON.parse(d.body) as Record<string, unknown>),
    stop: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
