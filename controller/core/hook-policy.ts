// What a plan's hook may be given, against what the operator allows (the controller's flags), and
// what the controller adds to every hook pod so that it is admitted under Pod Security `restricted`
// and holds no identity the operator did not grant. Pure: the preflight check HookAdmission and the
// hook decision (decideHook, before a Job is created) both ask it.
//
// The hooks namespace is the Job's: env secretKeyRef/configMapKeyRef resolve there and nowhere else
// (a pod can only reference its own namespace), so a plan never reaches the operator namespace's
// Secrets. A plan chooses the ServiceAccount only among those the operator allowlisted; any other
// name is refused, the controller's own always; without one the pod runs as the namespace's
// `default` with no token mounted.
import type { HookName, HookSpec, PlanHooks } from '../../schemas/hooks.js';
import { refusedHookAnnotation, reservedHookLabel } from '../../schemas/hooks.js';

/** The operator's allowlists (flags of `kangal-patch run`, values of the chart). */
export interface HookPolicy {
  /** ServiceAccounts of the hooks namespace a hook may run as (with its token mounted); empty: only `default`, without a token. */
  serviceAccounts: readonly string[];
  /** PriorityClasses a hook may ask for; empty: none. */
  priorityClasses: readonly string[];
  /** Registries (a host, or a host and a path prefix) hook images must come from; empty: any. */
  imageRegistries: readonly string[];
  /** The controller's own ServiceAccount name: never a hook's. */
  controllerServiceAccount: string;
}

/** The controller's ServiceAccount as kustomize and the chart's default release name it: refused even when the controller runs under another. */
export const CONTROLLER_SERVICE_ACCOUNT = 'kangal-patch-controller';

export const DEFAULT_HOOK_POLICY: HookPolicy = {
  serviceAccounts: [],
  priorityClasses: [],
  imageRegistries: [],
  controllerServiceAccount: CONTROLLER_SERVICE_ACCOUNT,
};

/** Where the operator changes each allowlist: the flag, and the chart value setting it. */
const HOOK_POLICY_SETTINGS = {
  serviceAccounts: { flag: '--hook-service-accounts', value: 'hooks.serviceAccounts' },
  priorityClasses: { flag: '--hook-priority-classes', value: 'hooks.priorityClasses' },
  imageRegistries: { flag: '--hook-image-registries', value: 'hooks.imageRegistries' },
} as const;

const setting = (k: keyof typeof HOOK_POLICY_SETTINGS): string =>
  `${HOOK_POLICY_SETTINGS[k].flag} (chart value ${HOOK_POLICY_SETTINGS[k].value})`;

/** One thing of a hook the policy refuses: the field (as a plan file spells it) and why, with what to change. */
export interface HookViolation {
  path: string;
  message: string;
}

/** The PriorityClasses that let a pod preempt system components: never a hook's unless allowlisted. */
const SYSTEM_PRIORITY_CLASSES = new Set(['system-node-critical', 'system-cluster-critical']);

/** Everything of one hook the policy refuses (empty: admissible). `root` is where the hook sits, e.g. `spec.hooks.preNode`. */
export function hookViolations(
  hook: HookName,
  spec: HookSpec,
  policy: HookPolicy,
  root = `spec.hooks.${hook}`,
): HookViolation[] {
  const at = (rest: string): string => `${root}.template.${rest}`;
  return [
    ...identityViolations(spec, policy, at),
    ...imageViolations(spec, policy, at),
    ...metadataViolations(spec, at),
  ];
}

type At = (rest: string) => string;

/** The ServiceAccount and the PriorityClass: only what the operator allowlisted, never the controller's own. */
function identityViolations(spec: HookSpec, policy: HookPolicy, at: At): HookViolation[] {
  const out: HookViolation[] = [];
  const sa = spec.template.spec.serviceAccountName;
  if (sa !== undefined && (sa === policy.controllerServiceAccount || sa === CONTROLLER_SERVICE_ACCOUNT)) {
    out.push({
      path: at('spec.serviceAccountName'),
      message: `ServiceAccount ${sa} is the controller's own name: hooks never run as it; use a ServiceAccount of the hooks namespace that the operator allowed in ${setting('serviceAccounts')}`,
    });
  } else if (sa !== undefined && sa !== 'default' && !policy.serviceAccounts.includes(sa)) {
    out.push({
      path: at('spec.serviceAccountName'),
      message: `ServiceAccount ${sa} is not allowed for hooks (${listed(policy.serviceAccounts)}): add it to ${setting('serviceAccounts')}, or omit serviceAccountName`,
    });
  }
  const pc = spec.template.spec.priorityClassName;
  if (pc !== undefined && !policy.priorityClasses.includes(pc)) {
    const system = SYSTEM_PRIORITY_CLASSES.has(pc)
      ? " (a system PriorityClass lets the hook preempt the cluster's own components)"
      : '';
    out.push({
      path: at('spec.priorityClassName'),
      message: `PriorityClass ${pc} is not allowed for hooks${system} (${listed(policy.priorityClasses)}): add it to ${setting('priorityClasses')}, or omit priorityClassName`,
    });
  }
  return out;
}

/** Images outside the allowed registries (none when the operator allows any). */
function imageViolations(spec: HookSpec, policy: HookPolicy, at: At): HookViolation[] {
  if (policy.imageRegistries.length === 0) return [];
  return spec.template.spec.containers.flatMap((c, i) =>
    imageAllowed(c.image, policy.imageRegistries)
      ? []
      : [
          {
            path: at(`spec.containers[${i}].image`),
            message: `image ${c.image} is not from an allowed registry (${policy.imageRegistries.join(', ')}): use an image from one of them, or add its registry to ${setting('imageRegistries')}`,
          },
        ],
  );
}

/** The schema refuses these already; a PatchJob or PatchPlan stored by an older controller is checked again here. */
function metadataViolations(spec: HookSpec, at: At): HookViolation[] {
  const md = spec.template.metadata;
  const labels = Object.keys(md?.labels ?? {}).flatMap((key) => {
    const why = reservedHookLabel(key);
    return why === undefined ? [] : [{ path: at(`metadata.labels["${key}"]`), message: why }];
  });
  const annotations = Object.keys(md?.annotations ?? {}).flatMap((key) => {
    const why = refusedHookAnnotation(key);
    return why === undefined ? [] : [{ path: at(`metadata.annotations["${key}"]`), message: why }];
  });
  return [...labels, ...annotations];
}

const listed = (names: readonly string[]): string =>
  names.length === 0 ? 'none are allowed' : `allowed: ${names.join(', ')}`;

/** Every hook of a plan (or of a PatchJob's node hooks) that the policy refuses, in hook order. */
export function planHookViolations(hooks: Partial<PlanHooks> | undefined, policy: HookPolicy): HookViolation[] {
  if (hooks === undefined) return [];
  return (['prePlan', 'preNode', 'postNode', 'postPlan'] as const).flatMap((name) => {
    const spec = hooks[name];
    return spec === undefined ? [] : hookViolations(name, spec, policy);
  });
}

/** `path: message; path: message` (the first `max`, then how many more). */
export function describeViolations(v: readonly HookViolation[], max = 3): string {
  const shown = v
    .slice(0, max)
    .map((x) => `${x.path}: ${x.message}`)
    .join('; ');
  return v.length > max ? `${shown}; and ${v.length - max} more` : shown;
}

/** The user and group a hook runs as unless its template says otherwise (nobody). */
const HOOK_RUN_AS = 65534;

/** What the controller sets on every hook pod, over anything of the template. */
export interface HookPodSecurity {
  serviceAccountName: string;
  automountServiceAccountToken: boolean;
  pod: {
    runAsNonRoot: true;
    runAsUser: number;
    runAsGroup: number;
    seccompProfile: { type: 'RuntimeDefault' };
  };
  container: {
    allowPrivilegeEscalation: false;
    privileged: false;
    runAsNonRoot: true;
    capabilities: { drop: ['ALL'] };
    seccompProfile: { type: 'RuntimeDefault' };
  };
}

/**
 * Pod Security `restricted` for every hook pod: non-root, RuntimeDefault seccomp, no privilege
 * escalation, no capabilities. The token is mounted only for a ServiceAccount the operator
 * allowlisted (the hook needs its rights); `default` and anything else run without one.
 */
export function hookPodSecurity(spec: HookSpec, policy: HookPolicy): HookPodSecurity {
  const sa = spec.template.spec.serviceAccountName ?? 'default';
  const granted =
    sa !== policy.controllerServiceAccount && sa !== CONTROLLER_SERVICE_ACCOUNT && policy.serviceAccounts.includes(sa);
  const ids = spec.template.spec.securityContext;
  return {
    serviceAccountName: sa,
    automountServiceAccountToken: granted,
    pod: {
      runAsNonRoot: true,
      runAsUser: ids?.runAsUser ?? HOOK_RUN_AS,
      runAsGroup: ids?.runAsGroup ?? HOOK_RUN_AS,
      seccompProfile: { type: 'RuntimeDefault' },
    },
    container: {
      allowPrivilegeEscalation: false,
      privileged: false,
      runAsNonRoot: true,
      capabilities: { drop: ['ALL'] },
      seccompProfile: { type: 'RuntimeDefault' },
    },
  };
}

// ---- image registries ----

const DOMAIN_PART = '(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)';
const DOMAIN = `${DOMAIN_PART}(?:\\.${DOMAIN_PART})*(?::[0-9]+)?`;
const PATH_PART = '[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*';
const TAG = '[\\w][\\w.-]{0,127}';
const DIGEST = '[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}';
/** An image reference as the distribution grammar has it: name, optional tag, optional digest. */
const REFERENCE = new RegExp(`^((?:${DOMAIN}/)?${PATH_PART}(?:/${PATH_PART})*)(?::(${TAG}))?(?:@(${DIGEST}))?$`);
/** An allowlist entry: a registry host (with port), optionally a path prefix. */
const REGISTRY_ENTRY = new RegExp(`^${DOMAIN}(?:/${PATH_PART})*$`);

const DOCKER_HUB_ALIASES = new Set(['docker.io', 'index.docker.io', 'registry-1.docker.io']);

/** The fully qualified repository of an image (`busybox:1.37` → `docker.io/library/busybox`), or undefined when it is not an image reference. */
export function imageRepository(image: string): string | undefined {
  const m = REFERENCE.exec(image);
  if (!m?.[1]) return undefined;
  const name = m[1];
  const slash = name.indexOf('/');
  const first = slash < 0 ? '' : name.slice(0, slash);
  const hasDomain = first.includes('.') || first.includes(':') || first === 'localhost';
  if (!hasDomain) return `docker.io/${slash < 0 ? `library/${name}` : name}`;
  const host = first.toLowerCase();
  return `${DOCKER_HUB_ALIASES.has(host) ? 'docker.io' : host}${name.slice(slash)}`;
}

/** An allowlist entry in the form images are compared with (lowercase host, Docker Hub aliases as docker.io), or an Error saying why it is not one. */
export function registryEntry(text: string): string | Error {
  const entry = text.trim().replace(/\/+$/, '');
  if (!REGISTRY_ENTRY.test(entry))
    return new Error(
      `"${text}" is not a registry such as "ghcr.io/acme" or "registry.example.com:5000" (a host, optionally a path; no tag or digest)`,
    );
  const slash = entry.indexOf('/');
  const host = (slash < 0 ? entry : entry.slice(0, slash)).toLowerCase();
  return `${DOCKER_HUB_ALIASES.has(host) ? 'docker.io' : host}${slash < 0 ? '' : entry.slice(slash)}`;
}

/** The image comes from one of the registries (host, or host and path prefix, on `/` boundaries). An unparsable image never does. */
export function imageAllowed(image: string, registries: readonly string[]): boolean {
  const repo = imageRepository(image);
  if (repo === undefined) return false;
  return registries.some((r) => {
    const entry = registryEntry(r);
    return typeof entry === 'string' && (repo === entry || repo.startsWith(`${entry}/`));
  });
}
