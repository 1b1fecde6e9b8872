// The install manifests under kustomize/ as parsed objects, and the RBAC policy they must keep.
// Shared by the unit tests (source files) and the integration test (kubectl kustomize output).
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';

export const repoRoot = fileURLToPath(new URL('../..', import.meta.url));
export const OPERATOR_NAMESPACE = 'kangal-patch';
export const SERVICE_ACCOUNT = 'kangal-patch-controller';

export interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  [key: string]: unknown;
}

export interface PolicyRule {
  apiGroups?: string[];
  resources?: string[];
  resourceNames?: string[];
  nonResourceURLs?: string[];
  verbs: string[];
}

/** Every YAML document of a multi-document text; a YAML error throws naming `what`. */
export function parseObjects(text: string, what: string): K8sObject[] {
  return parseAllDocuments(text).flatMap((d) => {
    if (d.errors.length > 0) throw new Error(`${what}: ${d.errors.map((e) => e.message).join('; ')}`);
    const o = d.toJS() as K8sObject | null;
    return o ? [o] : [];
  });
}

/** Every Kubernetes object in the YAML files under kustomize/<dir> (recursively), with its file; kustomization files are not objects. */
export function manifestFiles(dir: string): { file: string; object: K8sObject }[] {
  const base = join(repoRoot, 'kustomize', dir);
  const walk = (d: string): string[] =>
    readdirSync(d, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(join(d, e.name)) : /\.ya?ml$/.test(e.name) ? [join(d, e.name)] : []));
  return walk(base)
    .filter((f) => !/(^|\/)kustomization\.ya?ml$/.test(f))
    .flatMap((f) => parseObjects(readFileSync(f, 'utf8'), f).map((object) => ({ file: relative(repoRoot, f), object })));
}

const FORBIDDEN_VERBS = ['escalate', 'bind', 'impersonate'];

/** What breaks least privilege in these objects, one line per problem (empty: none). */
export function rbacViolations(objects: K8sObject[]): string[] {
  return objects.flatMap((o) => {
    if (o.kind !== 'Role' && o.kind !== 'ClusterRole') return [];
    const who = `${o.kind} ${o.metadata.namespace ? `${o.metadata.namespace}/` : ''}${o.metadata.name}`;
    const aggregated = o.kind === 'ClusterRole' && o['aggregationRule'] !== undefined ? [`${who}: aggregationRule would pull in other roles' rules`] : [];
    const rules = (o['rules'] as PolicyRule[] | undefined) ?? [];
    return [...aggregated, ...rules.flatMap((rule, i) => ruleViolations(`${who} rule ${i}`, o, rule))];
  });
}

const SECRET_VERBS = ['get', 'list', 'watch'];

function ruleViolations(at: string, role: K8sObject, rule: PolicyRule): string[] {
  const out: string[] = [];
  for (const field of ['apiGroups', 'resources', 'resourceNames', 'nonResourceURLs', 'verbs'] as const) {
    if ((rule[field] ?? []).some((v) => v.includes('*'))) out.push(`${at}: wildcard in ${field}`);
  }
  for (const verb of rule.verbs.filter((v) => FORBIDDEN_VERBS.includes(v))) out.push(`${at}: verb ${verb}`);
  const secrets = (rule.apiGroups ?? []).includes('') && (rule.resources ?? []).some((r) => r === 'secrets' || r.startsWith('secrets/'));
  if (!secrets) return out;
  if (role.kind === 'ClusterRole') out.push(`${at}: a ClusterRole grants Secrets`);
  else if (role.metadata.namespace !== OPERATOR_NAMESPACE) out.push(`${at}: Secrets outside the operator namespace ${OPERATOR_NAMESPACE}`);
  // Read only: get, and list/watch for the controller's field-selected watch on a named Talos Secret.
  for (const verb of rule.verbs.filter((v) => !SECRET_VERBS.includes(v))) out.push(`${at}: Secret verb ${verb} (get, list, watch only)`);
  return out;
}
