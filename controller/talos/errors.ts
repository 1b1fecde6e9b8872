// The one error type the Talos adapter throws: a kind (what to do about it), whether it is
// transient, and where it happened (method, node, endpoint).
import { TalosErrorKind } from '../core/talos-flow.js';

export { TalosErrorKind };

export interface TalosApiErrorInit {
  kind: TalosErrorKind;
  message: string;
  transient?: boolean;
  method?: string;
  node?: string;
  endpoint?: string;
  grpcCode?: number;
  cause?: unknown;
}

export class TalosApiError extends Error {
  readonly kind: TalosErrorKind;
  readonly transient: boolean;
  readonly method: string | undefined;
  readonly node: string | undefined;
  readonly endpoint: string | undefined;
  readonly grpcCode: number | undefined;

  constructor(init: TalosApiErrorInit) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.name = 'TalosApiError';
    this.kind = init.kind;
    this.transient = init.transient ?? false;
    this.method = init.method;
    this.node = init.node;
    this.endpoint = init.endpoint;
    this.grpcCode = init.grpcCode;
  }
}

export function isTalosApiError(err: unknown): err is TalosApiError {
  return err instanceof TalosApiError;
}
