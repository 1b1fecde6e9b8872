// The signed, append-only index of one cluster's rollout reports (status/<cluster>/index.yaml):
// what binds the set of reports, so a report cannot be withdrawn, changed or replayed without
// downstream noticing. Pure: digests are computed by the caller (gitops/promotion/report-index.ts).
//
// Writer: every report write makes the next index from the previous one: sequence + 1, the written
// report's entry added or updated (its sequence = that write), no entry ever removed.
// Reader: every listed report present with its digest, every report file listed, the entries'
// sequences distinct with the highest equal to the index's, and the index's sequence not below the
// highest one this downstream already saw (recorded in its status).

export const REPORT_INDEX_KIND = 'ReportIndex';
export const REPORT_INDEX_API_VERSION = 'kangalpatch.ozalp.dk/v1alpha1';

interface ReportIndexEntry {
  /** Repository path of the report's YAML twin (status/<cluster>/<plan>.yaml). */
  path: string;
  /** The write that last wrote it. */
  sequence: number;
  /** SHA-256 (hex) of the YAML twin's exact text. */
  sha256: string;
}

export interface ReportIndex {
  apiVersion: typeof REPORT_INDEX_API_VERSION;
  kind: typeof REPORT_INDEX_KIND;
  cluster: string;
  /** One more with every report write; never reset. */
  sequence: number;
  /** Sorted by path; never shortened. */
  reports: ReportIndexEntry[];
}

/** status/<cluster>/index.yaml */
export const reportIndexPath = (cluster: string): string => `status/${cluster}/index.yaml`;

/**
 * The index after writing the report at `path` with `sha256`, or undefined when `previous` already
 * lists exactly that (nothing to write: an unchanged report does not advance the sequence).
 */
export function nextReportIndex(
  previous: ReportIndex | undefined,
  cluster: string,
  written: { path: string; sha256: string },
): ReportIndex | undefined {
  const old = previous?.reports.find((e) => e.path === written.path);
  if (previous && old?.sha256 === written.sha256) return undefined;
  const sequence = (previous?.sequence ?? 0) + 1;
  const reports = (previous?.reports ?? []).filter((e) => e.path !== written.path).map((e) => ({ ...e }));
  reports.push({ path: written.path, sequence, sha256: written.sha256 });
  reports.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  return { apiVersion: REPORT_INDEX_API_VERSION, kind: REPORT_INDEX_KIND, cluster, sequence, reports };
}

export interface IndexCheckInput {
  cluster: string;
  /** The verified index (its signature already checked). */
  index: ReportIndex;
  /** Report YAML twins of the cluster present in the tree (not the index itself): path → SHA-256. */
  present: ReadonlyMap<string, string>;
  /** The highest sequence of this cluster's index already seen downstream (undefined: none yet). */
  seen: number | undefined;
}

export type IndexCheck =
  /** The whole cluster's evidence is refused: why (names the cluster, the file and the sequence). */
  | { ok: false; reason: string }
  /** The index holds: `unindexed` report files are not evidence (each rejected), the rest may be. */
  | { ok: true; sequence: number; unindexed: string[] };

/** The reader's checks of one cluster's index against the report files of the tree. */
export function checkReportIndex(input: IndexCheckInput): IndexCheck {
  const { cluster, index, present, seen } = input;
  const file = reportIndexPath(cluster);
  const at = `cluster ${cluster}: ${file} (sequence ${index.sequence})`;
  if (index.cluster !== cluster) return { ok: false, reason: `${at} names cluster ${index.cluster}, not ${cluster}` };
  if (seen !== undefined && index.sequence < seen) {
    return {
      ok: false,
      reason: `${at} is older than the index already seen: sequence ${seen} was seen, sequence ${index.sequence} is offered (a replayed index); ${cluster}'s evidence is refused`,
    };
  }
  const problem = entriesProblem(input, at) ?? reportsProblem(input);
  if (problem !== undefined) return { ok: false, reason: problem };
  const listed = new Set(index.reports.map((e) => e.path));
  const unindexed = [...present.keys()].filter((p) => !listed.has(p)).sort();
  return { ok: true, sequence: index.sequence, unindexed };
}

/** What is wrong with the index's entries themselves (`at` names the index): a path that is no report of the cluster, or a gap. */
function entriesProblem({ cluster, index }: IndexCheckInput, at: string): string | undefined {
  const file = reportIndexPath(cluster);
  const bySequence = new Map<number, string>();
  for (const e of index.reports) {
    if (!e.path.startsWith(`status/${cluster}/`) || !e.path.endsWith('.yaml') || e.path === file)
      return `${at} lists ${e.path}, which is not a report of cluster ${cluster}`;
    const twin = bySequence.get(e.sequence);
    if (twin !== undefined) return `${at} has a gap: ${twin} and ${e.path} both claim sequence ${e.sequence}`;
    bySequence.set(e.sequence, e.path);
  }
  const highest = Math.max(0, ...bySequence.keys());
  if (highest !== index.sequence)
    return `${at} has a gap: its highest report entry is at sequence ${highest}, not ${index.sequence}`;
  return undefined;
}

/** A report the index lists that the tree no longer has (withdrawn) or has changed (its SHA-256 differs). */
function reportsProblem({ cluster, index, present }: IndexCheckInput): string | undefined {
  const file = reportIndexPath(cluster);
  for (const e of index.reports) {
    const digest = present.get(e.path);
    if (digest === undefined)
      return `cluster ${cluster}: report ${e.path} listed at sequence ${e.sequence} in ${file} (sequence ${index.sequence}) is missing: a withdrawn report; ${cluster}'s evidence is refused`;
    if (digest !== e.sha256)
      return `cluster ${cluster}: report ${e.path} listed at sequence ${e.sequence} in ${file} (sequence ${index.sequence}) changed: its SHA-256 is ${digest.slice(0, 12)}…, the index says ${e.sha256.slice(0, 12)}…; ${cluster}'s evidence is refused`;
  }
  return undefined;
}

/** The reason an unindexed report file is rejected. */
export const unindexedReason = (cluster: string, path: string, sequence: number | undefined): string =>
  sequence === undefined
    ? `cluster ${cluster}: ${path} is not in the signed index (${reportIndexPath(cluster)} is missing)`
    : `cluster ${cluster}: ${path} is not in the signed index (${reportIndexPath(cluster)}, sequence ${sequence})`;
