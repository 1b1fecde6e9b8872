// TalosApiErrors for one attempt of a call, built where the cause is known: the gRPC status a call
// ended with, a channel that never connected, a TLS diagnosis, an aborted context.
import * as grpc from '@grpc/grpc-js';
import { classifyGrpcError } from '../core/talos-flow.js';
import { TalosApiError, TalosErrorKind } from './errors.js';
import type { Readiness } from './connect.js';

/** Where an attempt ran: named in every error. */
export interface CallSite {
  /** e.g. `MachineService.Version` */
  method: string;
  node: string | undefined;
  endpoint: string;
}

function forNode(site: CallSite): string {
  return site.node !== undefined ? ` for node ${site.node}` : '';
}

function isServiceError(err: unknown): err is grpc.ServiceError {
  return err instanceof Error && typeof (err as Partial<grpc.ServiceError>).code === 'number';
}

const where = (site: CallSite): { method: string; node: string | undefined; endpoint: string } => ({
  method: site.method,
  node: site.node,
  endpoint: site.endpoint,
});

/** A stream that sent no message for `idleMs`: ended by the transport's watchdog. */
export class StreamIdleError extends Error {
  constructor(readonly idleMs: number) {
    super(`no message for ${idleMs} ms`);
    this.name = 'StreamIdleError';
  }
}

/** The context was aborted (leader loss, shutdown): never transient, the caller stops. */
export function canceledError(site: CallSite, cause?: unknown): TalosApiError {
  return new TalosApiError({
    kind: TalosErrorKind.Canceled,
    message: `Talos ${site.method}${forNode(site)} via endpoint ${site.endpoint}: canceled`,
    ...where(site),
    cause,
  });
}

/** The context's deadline passed before an attempt could start. */
export function deadlinePassedError(site: CallSite): TalosApiError {
  return new TalosApiError({
    kind: TalosErrorKind.DeadlineExceeded,
    transient: true,
    message: `Talos ${site.method}${forNode(site)}: the operation's deadline passed before it could be sent`,
    ...where(site),
  });
}

/** The channel never became ready: the request was not sent (safe to send elsewhere). */
export function notConnectedError(site: CallSite, readiness: Exclude<Readiness, 'ready' | 'aborted'>): TalosApiError {
  const why = {
    failed: 'connection failed',
    timeout: 'no connection before the attempt timeout',
    closed: 'channel closed',
  }[readiness];
  return new TalosApiError({
    kind: TalosErrorKind.Unavailable,
    transient: readiness !== 'closed',
    message: `Talos ${site.method}${forNode(site)} not sent: endpoint ${site.endpoint} unavailable (${why})`,
    ...where(site),
  });
}

function tlsAdvice(site: CallSite, why: string): string {
  return (
    `TLS handshake with Talos endpoint ${site.endpoint} failed (${site.method}${forNode(site)}): ${why} — ` +
    `check that ca.crt is the cluster's OS CA and tls.crt/tls.key are a valid client certificate it issued`
  );
}

/** A TLS diagnosis of an endpoint that refused the connection (tls-diagnosis.ts). */
export function tlsRejectedError(site: CallSite, why: string): TalosApiError {
  return new TalosApiError({ kind: TalosErrorKind.TlsRejected, message: tlsAdvice(site, why), ...where(site) });
}

/**
 * The error a started call failed with. An aborted context wins over whatever status grpc-js
 * reported for the cancelled call. `roles` (the client certificate's) explain a PermissionDenied.
 */
export function callError(err: unknown, site: CallSite, signal: AbortSignal, roles: readonly string[]): TalosApiError {
  if (signal.aborted)
    return err instanceof TalosApiError && err.kind === TalosErrorKind.Canceled ? err : canceledError(site, err);
  if (err instanceof TalosApiError) return err;
  if (err instanceof StreamIdleError) {
    return new TalosApiError({
      kind: TalosErrorKind.DeadlineExceeded,
      transient: true,
      message:
        `Talos ${site.method}${forNode(site)} via endpoint ${site.endpoint} sent nothing for ${err.idleMs} ms; ` +
        `ended it — the node may be stuck (see \`talosctl dmesg\` and \`talosctl logs machined\` on it)`,
      ...where(site),
      cause: err,
    });
  }
  if (!isServiceError(err)) {
    return new TalosApiError({
      kind: TalosErrorKind.Unknown,
      message: `Talos ${site.method}${forNode(site)} via endpoint ${site.endpoint}: ${String(err)}`,
      ...where(site),
      cause: err,
    });
  }
  return grpcCallError(err, site, roles);
}

/** A gRPC status the call ended with, classified (classifyGrpcError) and explained for its kind. */
function grpcCallError(err: grpc.ServiceError, site: CallSite, roles: readonly string[]): TalosApiError {
  const details = err.details || err.message;
  const { kind, transient } = classifyGrpcError(err.code, details);
  let message: string;
  switch (kind) {
    case TalosErrorKind.TlsRejected:
      message = tlsAdvice(site, details);
      break;
    case TalosErrorKind.PermissionDenied:
      message =
        `Talos endpoint ${site.endpoint} refused ${site.method}${forNode(site)}: ${details} ` +
        `(client certificate roles: ${roles.join(', ') || 'none'}; upgrades need os:admin)`;
      break;
    case TalosErrorKind.Unavailable:
      message = `Talos ${site.method}${forNode(site)} via endpoint ${site.endpoint}: unavailable: ${details}`;
      break;
    default:
      message = `Talos ${site.method}${forNode(site)} via endpoint ${site.endpoint}: ${grpc.status[err.code] ?? err.code}: ${details}`;
  }
  return new TalosApiError({ kind, transient, message, ...where(site), grpcCode: err.code, cause: err });
}

/** gRPC status codes by number, named as grpc-go names them (`DeadlineExceeded`), like TalosErrorKind. */
const GRPC_CODE_NAMES = [
  'OK',
  'Canceled',
  'Unknown',
  'InvalidArgument',
  'DeadlineExceeded',
  'NotFound',
  'AlreadyExists',
  'PermissionDenied',
  'ResourceExhausted',
  'FailedPrecondition',
  'Aborted',
  'OutOfRange',
  'Unimplemented',
  'Internal',
  'Unavailable',
  'DataLoss',
  'Unauthenticated',
] as const;

/**
 * The `code` a failed call is counted under: the gRPC status it ended with, else (not sent,
 * canceled, TLS refused, ...) the error's kind.
 */
export function callCode(err: unknown): string {
  if (!(err instanceof TalosApiError)) return TalosErrorKind.Unknown;
  if (err.grpcCode !== undefined) return GRPC_CODE_NAMES[err.grpcCode] ?? String(err.grpcCode);
  return err.kind;
}
