// resourceVersions are opaque strings to clients, but etcd's are decimal revisions, and comparing
// them is the only way to tell whether our own write or a watch event is newer.

/** True/false when both are decimal integers; undefined when they cannot be compared. */
export function isNewer(candidate: string, than: string): boolean | undefined {
  if (!/^\d+$/.test(candidate) || !/^\d+$/.test(than)) return undefined;
  return BigInt(candidate) > BigInt(than);
}
