// Pure Talos API decisions: which upgrade flow a node version takes, how an installer image
// reference breaks down, how a gRPC status is classified, how long to back off. No I/O.

/** Talos ≥ 1.13 has ImageService.Pull → LifecycleService.Upgrade → Reboot; older has only the legacy unary Upgrade. */
export const UpgradeFlow = {
  Legacy: 'legacy',
  Lifecycle: 'lifecycle',
} as const;
export type UpgradeFlow = (typeof UpgradeFlow)[keyof typeof UpgradeFlow];

export interface TalosSemver {
  major: number;
  minor: number;
  patch: number;
  prerelease: string;
}

/** Parses `v1.13.9`, `1.14.0-rc.1`; undefined when it is not a Talos version tag. */
export function parseTalosVersion(tag: string): TalosSemver | undefined {
  const m = /^v?(\d+)\.(\d+)\.(\d+)(?:-([0-9A-Za-z.-]+))?(?:\+[0-9A-Za-z.-]+)?$/.exec(tag.trim());
  if (!m) return undefined;
  return { major: Number(m[1]), minor: Number(m[2]), patch: Number(m[3]), prerelease: m[4] ?? '' };
}

function prereleaseRank(pre: string): [number, number] {
  // '' (final) sorts after every pre-release; alpha < beta < rc.
  if (pre === '') return [4, 0];
  const m = /^(alpha|beta|rc)\.(\d+)/.exec(pre);
  if (!m) return [0, 0];
  const order = { alpha: 1, beta: 2, rc: 3 } as const;
  return [order[m[1] as keyof typeof order], Number(m[2])];
}

/**
 * Orders Talos tags by release stage rather than by semver: a dev build `v1.14.0-alpha.1-12-gabc`
 * counts as alpha.1 here, where semver would order it after alpha.2 and so past the thresholds below.
 */
function compareTalosVersions(a: TalosSemver, b: TalosSemver): number {
  if (a.major !== b.major) return a.major - b.major;
  if (a.minor !== b.minor) return a.minor - b.minor;
  if (a.patch !== b.patch) return a.patch - b.patch;
  const [ra, na] = prereleaseRank(a.prerelease);
  const [rb, nb] = prereleaseRank(b.prerelease);
  return ra !== rb ? ra - rb : na - nb;
}

const LIFECYCLE_AFTER: TalosSemver = { major: 1, minor: 13, patch: 0, prerelease: 'alpha.2' };

/**
 * The flow talosctl 1.14 picks: the lifecycle API only when the node runs a version newer than
 * v1.13.0-alpha.2 (and below 2.0); anything else, or an unparsable tag, takes the legacy path.
 */
export function upgradeFlowFor(runningTag: string): UpgradeFlow {
  const v = parseTalosVersion(runningTag);
  if (!v || v.major >= 2) return UpgradeFlow.Legacy;
  return compareTalosVersions(v, LIFECYCLE_AFTER) > 0 ? UpgradeFlow.Lifecycle : UpgradeFlow.Legacy;
}

/** Whether the node stores its boot ID as the COSI resource `BootIDs.runtime.talos.dev` (1.14+). */
export function hasBootIdResource(runningTag: string): boolean {
  const v = parseTalosVersion(runningTag);
  return v !== undefined && compareTalosVersions(v, { major: 1, minor: 14, patch: 0, prerelease: 'alpha.2' }) >= 0;
}

export interface InstallerImageRef {
  /** e.g. `factory.talos.dev` or `ghcr.io` */
  registry: string;
  /** e.g. `metal-installer/<schematic>` or `siderolabs/installer` */
  repository: string;
  tag: string;
  /** Image Factory schematic ID when the reference is a factory installer. */
  schematic?: string;
  /** Platform from `<platform>-installer[-secureboot]`; `metal` for the legacy factory form. */
  platform?: string;
  secureBoot: boolean;
}

/** Splits an installer reference such as `factory.talos.dev/metal-installer/<id>:v1.14.0`. */
export function parseInstallerImage(ref: string): InstallerImageRef | undefined {
  const at = ref.indexOf('@');
  const withoutDigest = at >= 0 ? ref.slice(0, at) : ref;
  const colon = withoutDigest.lastIndexOf(':');
  const slash = withoutDigest.indexOf('/');
  if (slash <= 0 || colon < slash) return undefined;
  const registry = withoutDigest.slice(0, slash);
  const repository = withoutDigest.slice(slash + 1, colon);
  const tag = withoutDigest.slice(colon + 1);
  if (!repository || !tag) return undefined;
  const parts = repository.split('/');
  const m = /^(?:([a-z0-9-]+)-)?installer(-secureboot)?$/.exec(parts[0] ?? '');
  if (m && parts.length === 2 && /^[0-9a-f]{64}$/.test(parts[1] ?? '')) {
    return {
      registry,
      repository,
      tag,
      schematic: parts[1],
      platform: m[1] ?? 'metal',
      secureBoot: m[2] !== undefined,
    };
  }
  return { registry, repository, tag, secureBoot: /secureboot/.test(repository) };
}

/** Error kinds of a Talos API call, by what the caller should do about them. */
export const TalosErrorKind = {
  /** Node or endpoint not reachable (rebooting, down, network). Retry later. */
  Unavailable: 'Unavailable',
  /** The call's deadline passed. Retry later. */
  DeadlineExceeded: 'DeadlineExceeded',
  /** TLS handshake failed: wrong CA, expired or unknown client certificate. Fix credentials. */
  TlsRejected: 'TlsRejected',
  /** The client certificate's role may not call this method (e.g. os:reader calling Upgrade). */
  PermissionDenied: 'PermissionDenied',
  /** The credentials in the Secret are unusable before any call (bad PEM, expired cert). */
  BadCredentials: 'BadCredentials',
  /** Resource or file missing. */
  NotFound: 'NotFound',
  InvalidArgument: 'InvalidArgument',
  /** Node state forbids it now (another upgrade/apply in progress, not installed). */
  FailedPrecondition: 'FailedPrecondition',
  /** The node's Talos version does not have this API. */
  Unimplemented: 'Unimplemented',
  /** The operation ran and reported failure (installer exit code, upgrade validation). */
  OperationFailed: 'OperationFailed',
  /**
   * The node answered with something this controller cannot read: a field missing, an enum value it
   * does not know (a newer Talos?). Nothing is decided on it; retried later.
   */
  Malformed: 'Malformed',
  Canceled: 'Canceled',
  Unknown: 'Unknown',
} as const;
export type TalosErrorKind = (typeof TalosErrorKind)[keyof typeof TalosErrorKind];

/** gRPC status codes (numbers are fixed by the gRPC spec). */
export const GrpcCode = {
  OK: 0,
  CANCELLED: 1,
  UNKNOWN: 2,
  INVALID_ARGUMENT: 3,
  DEADLINE_EXCEEDED: 4,
  NOT_FOUND: 5,
  ALREADY_EXISTS: 6,
  PERMISSION_DENIED: 7,
  RESOURCE_EXHAUSTED: 8,
  FAILED_PRECONDITION: 9,
  ABORTED: 10,
  OUT_OF_RANGE: 11,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
  UNAVAILABLE: 14,
  DATA_LOSS: 15,
  UNAUTHENTICATED: 16,
} as const;

const TLS_FAILURE =
  /certificate|self[- ]signed|unable to verify|handshake|alert|ssl|tls|unable to get (local )?issuer/i;

export interface Classification {
  kind: TalosErrorKind;
  /** Worth retrying the same call after a backoff. */
  transient: boolean;
}

/** What a gRPC code means when its details text does not matter (UNAVAILABLE and INTERNAL read it). */
const BY_CODE: ReadonlyMap<number, Classification> = new Map([
  [GrpcCode.DEADLINE_EXCEEDED, { kind: TalosErrorKind.DeadlineExceeded, transient: true }],
  [GrpcCode.UNAUTHENTICATED, { kind: TalosErrorKind.TlsRejected, transient: false }],
  [GrpcCode.PERMISSION_DENIED, { kind: TalosErrorKind.PermissionDenied, transient: false }],
  [GrpcCode.NOT_FOUND, { kind: TalosErrorKind.NotFound, transient: false }],
  [GrpcCode.INVALID_ARGUMENT, { kind: TalosErrorKind.InvalidArgument, transient: false }],
  [GrpcCode.FAILED_PRECONDITION, { kind: TalosErrorKind.FailedPrecondition, transient: false }],
  [GrpcCode.UNIMPLEMENTED, { kind: TalosErrorKind.Unimplemented, transient: false }],
  [GrpcCode.CANCELLED, { kind: TalosErrorKind.Canceled, transient: false }],
  [GrpcCode.UNKNOWN, { kind: TalosErrorKind.OperationFailed, transient: false }],
]);

/** Classifies a gRPC failure (code + details text) the way the rollout must treat it. */
export function classifyGrpcError(code: number, details: string): Classification {
  if (code === GrpcCode.UNAVAILABLE) return classifyUnavailable(details);
  if (code === GrpcCode.INTERNAL) return classifyInternal(details);
  const known = BY_CODE.get(code);
  return known ? { ...known } : { kind: TalosErrorKind.Unknown, transient: false };
}

function classifyUnavailable(details: string): Classification {
  // grpc-js reports TLS handshake failures as UNAVAILABLE; they never heal by retrying.
  if (TLS_FAILURE.test(details) && !/dial tcp|connection refused|no such host/i.test(details)) {
    return { kind: TalosErrorKind.TlsRejected, transient: false };
  }
  return { kind: TalosErrorKind.Unavailable, transient: true };
}

function classifyInternal(details: string): Classification {
  // A connection reset mid-call surfaces as INTERNAL "Received RST_STREAM"/ECONNRESET.
  if (/RST_STREAM|ECONNRESET|socket hang up|Connection dropped/i.test(details)) {
    return { kind: TalosErrorKind.Unavailable, transient: true };
  }
  return { kind: TalosErrorKind.OperationFailed, transient: false };
}

export interface BackoffPolicy {
  initialMs: number;
  maxMs: number;
  factor: number;
}

/** Delay before retry number `attempt` (1-based); `jitter` in [0,1) is supplied by the caller. */
export function backoffDelay(policy: BackoffPolicy, attempt: number, jitter: number): number {
  const base = Math.min(policy.maxMs, policy.initialMs * policy.factor ** Math.max(0, attempt - 1));
  return Math.round(base / 2 + (base / 2) * jitter);
}
