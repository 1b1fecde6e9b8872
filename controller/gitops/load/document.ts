// Decides what a YAML document is: a PatchPlan to validate, another object to skip, or a mistake.
import { API_GROUP, API_VERSION, Kind } from '../../../schemas/api.js';
import { suggest } from '../../../schemas/suggest.js';

export type Route = { action: 'validate' } | { action: 'skip' } | { action: 'reject'; path: string[]; message: string };

export function routeDocument(value: unknown): Route {
  if (value === null || value === undefined) return { action: 'skip' }; // empty document, e.g. a trailing `---`
  if (typeof value !== 'object' || Array.isArray(value)) {
    return {
      action: 'reject',
      path: [],
      message: 'document must be a mapping with apiVersion, kind, metadata and spec',
    };
  }
  const { apiVersion, kind } = value as { apiVersion?: unknown; kind?: unknown };
  if (apiVersion === undefined && kind === undefined) {
    return { action: 'reject', path: [], message: 'not a Kubernetes object: apiVersion and kind are missing' };
  }
  if (kind === Kind.PatchPlan) {
    if (apiVersion === API_VERSION) return { action: 'validate' };
    return { action: 'reject', path: ['apiVersion'], message: `must be "${API_VERSION}" for kind PatchPlan` };
  }
  // Other objects (a Secret next to a plan, say) are not ours to judge, unless they claim our group.
  if (typeof apiVersion !== 'string' || !apiVersion.startsWith(`${API_GROUP}/`)) return { action: 'skip' };
  return rejectOwnGroupKind(kind);
}

/** A document of our API group that is not a PatchPlan: say which kind belongs there. */
function rejectOwnGroupKind(kind: unknown): Route {
  if (kind === Kind.PatchJob) {
    return {
      action: 'reject',
      path: ['kind'],
      message: 'PatchJob objects are created by the controller; only PatchPlan documents belong in a plans repository',
    };
  }
  const hint = typeof kind === 'string' ? suggest(kind, [Kind.PatchPlan]) : undefined;
  return {
    action: 'reject',
    path: ['kind'],
    message: `must be "PatchPlan" for ${API_GROUP}${hint ? ' (did you mean "PatchPlan"?)' : ''}`,
  };
}
