// The version skew rule of a Kubernetes upgrade: no kubelet may run a newer minor than the oldest
// kube-apiserver of the cluster (kubernetes.io version skew policy).
import semver from 'semver';

export interface ApiServerFact {
  /** Node the kube-apiserver static pod runs on. */
  node: string;
  /** Version of its image, undefined when the tag is no version. */
  version: string | undefined;
}

const minorOf = (v: string): number | undefined => {
  const p = semver.parse(v);
  return p ? p.major * 1000 + p.minor : undefined;
};

/** The kube-apiservers a kubelet at `version` would be newer than (an unknown version counts as older). */
export function olderApiServers(apiServers: readonly ApiServerFact[], version: string): ApiServerFact[] {
  const target = minorOf(version);
  if (target === undefined) return [];
  return apiServers.filter((a) => {
    const m = a.version === undefined ? undefined : minorOf(a.version);
    return m === undefined || m < target;
  });
}

export function describeApiServers(list: readonly ApiServerFact[]): string {
  return list.map((a) => `${a.node} (${a.version ?? 'unknown version'})`).join(', ');
}
