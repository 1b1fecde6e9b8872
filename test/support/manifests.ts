// The install manifests under kustomize/ as parsed objects, and the RBAC policy they must keep.
// Shared by the unit tests (source files) and the integration test (kubectl kustomize output).
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';

export const repoRoot = fileURLToPath(new URL('../..', import.meta.url));
export const OPERATOR_NAMESPACE = 'kangal-patch';
export const SERVICE_ACCOUNT = 'kangal-patch-controller';
/** The ServiceAccount health checks read as (impersonated by the controller). */
export const HEALTH_SERVICE_ACCOUNT = 'kangal-patch-health';

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
    readdirSync(d, { withFileTypes: true }).flatMap((e) =>
      e.isDirectory() ? walk(join(d, e.name)) : /\.ya?ml$/.test(e.name) ? [join(d, e.name)] : [],
    );
  return walk(base)
    .filter((f) => !/(^|\/)kustomization\.ya?ml$/.test(f))
    .flatMap((f) =>
      parseObjects(readFileSync(f, 'utf8'), f).map((object) => ({ file: relative(repoRoot, f), object })),
    );
}

const FORBIDDEN_VERBS = ['escalate', 'bind', 'impersonate'];

/** `namespace/name` of the health-check identities among `objects`: ServiceAccounts labelled for health checks that no pod can use (no token mounted). */
const healthIdentities = (objects: readonly K8sObject[]): Set<string> =>
  new Set(
    objects
      .filter(
        (o) =>
          o.kind === 'ServiceAccount' &&
          o.metadata.labels?.['app.kubernetes.io/component'] === 'health-checks' &&
          o['automountServiceAccountToken'] === false,
      )
      .map((o) => `${o.metadata.namespace ?? ''}/${o.metadata.name}`),
  );

/** The rule grants nothing but `impersonate` on one core ServiceAccount, by name. */
const impersonatesOneServiceAccount = (rule: PolicyRule): boolean =>
  rule.verbs.length === 1 &&
  rule.verbs[0] === 'impersonate' &&
  (rule.apiGroups ?? []).join() === '' &&
  (rule.resources ?? []).join() === 'serviceaccounts' &&
  (rule.resourceNames ?? []).length === 1;

/** The one impersonation allowed: a health-check identity, by name, in its own namespace, by a Role there. */
const healthImpersonation = (role: K8sObject, rule: PolicyRule, identities: ReadonlySet<string>): boolean =>
  role.kind === 'Role' &&
  impersonatesOneServiceAccount(rule) &&
  identities.has(`${role.metadata.namespace ?? ''}/${rule.resourceNames?.[0] ?? ''}`);

/** What breaks least privilege in these objects, one line per problem (empty: none). */
export function rbacViolations(objects: K8sObject[]): string[] {
  const identities = healthIdentities(objects);
  return objects.flatMap((o) => {
    if (o.kind !== 'Role' && o.kind !== 'ClusterRole') return [];
    const who = `${o.kind} ${o.metadata.namespace ? `${o.metadata.namespace}/` : ''}${o.metadata.name}`;
    const aggregated =
      o.kind === 'ClusterRole' && o['aggregationRule'] !== undefined
        ? [`${who}: aggregationRule would pull in other roles' rules`]
        : [];
    const rules = (o['rules'] as PolicyRule[] | undefined) ?? [];
    return [...aggregated, ...rules.flatMap((rule, i) => ruleViolations(`${who} rule ${i}`, o, rule, identities))];
  });
}

const SECRET_VERBS = ['get', 'list', 'watch'];

function ruleViolations(at: string, role: K8sObject, rule: PolicyRule, identities: ReadonlySet<string>): string[] {
  const out: string[] = [];
  for (const field of ['apiGroups', 'resources', 'resourceNames', 'nonResourceURLs', 'verbs'] as const) {
    if ((rule[field] ?? []).some((v) => v.includes('*'))) out.push(`${at}: wildcard in ${field}`);
  }
  if (!healthImpersonation(role, rule, identities))
    for (const verb of rule.verbs.filter((v) => FORBIDDEN_VERBS.includes(v))) out.push(`${at}: verb ${verb}`);
  return [...out, ...secretViolations(at, role, rule)];
}

/** A rule on core Secrets: namespaced in the operator's namespace, read only, and by name. */
function secretViolations(at: string, role: K8sObject, rule: PolicyRule): string[] {
  const secrets =
    (rule.apiGroups ?? []).includes('') &&
    (rule.resources ?? []).some((r) => r === 'secrets' || r.startsWith('secrets/'));
  if (!secrets) return [];
  const out: string[] = [];
  if (role.kind === 'ClusterRole') out.push(`${at}: a ClusterRole grants Secrets`);
  else if (role.metadata.namespace !== OPERATOR_NAMESPACE)
    out.push(`${at}: Secrets outside the operator namespace ${OPERATOR_NAMESPACE}`);
  // Read only: get, and list/watch for the controller's field-selected watch on a named Talos Secret.
  for (const verb of rule.verbs.filter((v) => !SECRET_VERBS.includes(v)))
    out.push(`${at}: Secret verb ${verb} (get, list, watch only)`);
  // By name: never every Secret of the namespace (the webhook secret, Git tokens, the signing key).
  if ((rule.resourceNames ?? []).length === 0)
    out.push(`${at}: Secrets without resourceNames (name the Talos credentials Secrets)`);
  return out;
}
