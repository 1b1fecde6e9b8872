// Raw gRPC access to the Talos simulator for integration tests: what any Talos client (not the
// product's) sends, with the generated message types, over mTLS with the lab's admin certificate.
import * as grpc from '@grpc/grpc-js';
import type { TalosSimulator } from '../lab/talos/index.js';

export function rawClient(sim: TalosSimulator, endpoint = sim.endpoint): grpc.Client {
  const creds = grpc.credentials.createSsl(
    Buffer.from(sim.caPem),
    Buffer.from(sim.adminCert.key),
    Buffer.from(sim.adminCert.cert),
  );
  return new grpc.Client(endpoint, creds);
}

export interface MethodDef<Req, Res> {
  path: string;
  requestSerialize: (req: Req) => Buffer;
  responseDeserialize: (buf: Buffer) => Res;
}

export function targeting(node: string, key: 'node' | 'nodes' = 'node'): grpc.Metadata {
  const md = new grpc.Metadata();
  for (const n of node.split(',')) md.add(key, n);
  return md;
}

/** One unary call; resolves with the response or the gRPC status code name it failed with. */
export function unary<Req, Res>(
  c: grpc.Client,
  def: MethodDef<Req, Res>,
  req: Req,
  md: grpc.Metadata,
): Promise<Res | string> {
  return new Promise((resolve) =>
    c.makeUnaryRequest(
      def.path,
      def.requestSerialize,
      def.responseDeserialize,
      req,
      md,
      { deadline: Date.now() + 5000 },
      (err, res) => resolve(err ? (grpc.status[err.code] ?? String(err.code)) : (res as Res)),
    ),
  );
}

/** One server-streaming call; resolves with every message, or the gRPC status code name it failed with. */
export function streamed<Req, Res>(
  c: grpc.Client,
  def: MethodDef<Req, Res>,
  req: Req,
  md: grpc.Metadata,
): Promise<Res[] | string> {
  return new Promise((resolve) => {
    const got: Res[] = [];
    const s = c.makeServerStreamRequest(def.path, def.requestSerialize, def.responseDeserialize, req, md, {
      deadline: Date.now() + 5000,
    });
    s.on('data', (m: Res) => got.push(m));
    s.on('error', (err: grpc.ServiceError) => resolve(grpc.status[err.code] ?? String(err.code)));
    s.on('end', () => resolve(got));
  });
}
