// The checked request pipeline both REST surfaces of the lab forge (GitHub's and Gitea's) share:
// the operation the route resolved to, a JSON body, the request against the description, a
// handler, the repository. Each refusal is recorded as a contract violation and answered in the
// forge's own error shape; a missing repository is a real 404, not a violation.
import type { ForgeContract, Match, Operation } from './openapi.js';
import type { RepoState } from './shapes.js';

export interface Reply {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

export type ViolationKind = 'request' | 'response' | 'route' | 'unimplemented';

/** What a handler gets once the request passed every check. */
interface CheckedRequest {
  repo: RepoState;
  params: Record<string, string>;
  body: Record<string, unknown>;
}

export interface Surface {
  contract: ForgeContract;
  /** The violation text of a route the description does not have. */
  notAnOperation: string;
  handle(operationId: string): ((req: CheckedRequest) => Promise<Reply> | Reply) | undefined;
  repo(owner: string, name: string): RepoState | undefined;
  violation(kind: ViolationKind, operationId: string | undefined, errors: string[]): void;
  /** The forge's answers: unknown route, body not JSON, invalid request, unknown repository. */
  refuse: { route(): Reply; badJson(): Reply; invalid(errors: string[]): Reply; noRepo(): Reply };
}

/** A request as a surface received it: the operation its route resolved to (if any), its query, its raw body. */
export interface ReceivedRequest {
  matched: Match | undefined;
  query: Record<string, unknown>;
  raw: Buffer;
}

/** The reply, and the operation whose response description it must match (none for refusals before one was resolved). */
export async function dispatch(
  s: Surface,
  { matched, query, raw }: ReceivedRequest,
  record: { operationId: string | undefined; body: unknown },
): Promise<{ reply: Reply; op?: Operation }> {
  if (!matched) {
    s.violation('route', undefined, [s.notAnOperation]);
    return { reply: s.refuse.route() };
  }
  const { op, pathParams } = matched;
  record.operationId = op.operationId;
  const hasBody = raw.length > 0;
  let body: unknown;
  if (hasBody) {
    try {
      body = JSON.parse(raw.toString('utf8'));
      record.body = body;
    } catch {
      s.violation('request', op.operationId, ['body is not JSON']);
      return { reply: s.refuse.badJson() };
    }
  }
  const errors = s.contract.validateRequest(op, { pathParams, query, body, hasBody });
  if (errors.length > 0) {
    s.violation('request', op.operationId, errors);
    return { reply: s.refuse.invalid(errors), op };
  }
  const handler = s.handle(op.operationId);
  if (!handler) {
    const message = `the lab forge does not implement ${op.operationId}`;
    s.violation('unimplemented', op.operationId, [message]);
    return { reply: { status: 501, body: { message } } };
  }
  const repo = s.repo(pathParams.owner ?? '', pathParams.repo ?? '');
  if (!repo) return { reply: s.refuse.noRepo(), op };
  return { reply: await handler({ repo, params: pathParams, body: (body ?? {}) as Record<string, unknown> }), op };
}
