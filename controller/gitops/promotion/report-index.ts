// status/<cluster>/index.yaml and its .sig: the signed, append-only index of a cluster's reports
// (core/promotion/report-index.ts decides; this reads, writes, digests and signs it, with the same
// key and path-binding signature as the reports themselves).
import { createHash } from 'node:crypto';
import { stringify } from 'yaml';
import { z } from 'zod';
import { formatPath } from '../../../schemas/field-path.js';
import {
  nextReportIndex,
  REPORT_INDEX_API_VERSION,
  REPORT_INDEX_KIND,
  reportIndexPath,
  type ReportIndex,
} from '../../core/promotion/report-index.js';
import { OutcomeError, OutcomeKind } from '../../runtime/outcome.js';
import { DEFAULT_LIMITS } from '../load/limits.js';
import { parseYamlFile } from '../load/yaml.js';
import { signaturePath, type ReportSigner } from './signature.js';

const sequence = z.number().int().positive().max(Number.MAX_SAFE_INTEGER);
const indexFile = z.strictObject({
  apiVersion: z.literal(REPORT_INDEX_API_VERSION),
  kind: z.literal(REPORT_INDEX_KIND),
  cluster: z.string(),
  sequence,
  reports: z.array(z.strictObject({ path: z.string(), sequence, sha256: z.string().regex(/^[0-9a-f]{64}$/) })),
});

export const sha256 = (text: string): string => createHash('sha256').update(text, 'utf8').digest('hex');

/** The index file's text, or why it is not a ReportIndex. */
export function parseReportIndex(text: string): ReportIndex | string {
  const parsed = parseYamlFile(text, DEFAULT_LIMITS);
  const doc = parsed.documents[0];
  const problem = parsed.problems[0] ?? doc?.problems[0];
  if (!doc || problem) return `does not parse as YAML${problem ? `: ${problem.message}` : ''}`;
  const r = indexFile.safeParse(doc.value);
  if (!r.success) return `is not a ReportIndex: ${firstIssue(r.error)}`.trim();
  return r.data;
}

/** The first issue of a failed parse, its field path first (both empty when there is none). */
export function firstIssue(error: z.ZodError): string {
  return `${formatPath(error.issues[0]?.path ?? [])} ${error.issues[0]?.message ?? ''}`;
}

export function renderReportIndex(index: ReportIndex): string {
  return `# Written by KangalPatch: the signed, append-only index of cluster ${index.cluster}'s rollout reports (docs/auto-update-and-promotion.md "Promoting across clusters").\n${stringify(index, { lineWidth: 0 })}`;
}

/** A report's YAML twin as it is written: its path and text. */
export interface IndexedReport {
  yamlPath: string;
  yaml: string;
}

/**
 * The index files to write with the report `yamlPath` (text `yaml`), from the previous index of
 * the tree the commit is built on (`read`): {} when that index already lists the report with this
 * digest. A previous index that this controller's key does not verify is never built on: someone
 * changed it, and signing on top would launder the change (Stalled, naming the file).
 */
export async function reportIndexFiles(
  read: (path: string) => Promise<string | undefined>,
  cluster: string,
  signer: ReportSigner,
  { yamlPath, yaml }: IndexedReport,
): Promise<Record<string, string>> {
  const path = reportIndexPath(cluster);
  const [text, sig] = await Promise.all([read(path), read(signaturePath(path))]);
  let previous: ReportIndex | undefined;
  if (text !== undefined || sig !== undefined) {
    const stalled = (why: string): OutcomeError =>
      new OutcomeError({
        kind: OutcomeKind.Stalled,
        reason: 'ReportIndexNotTrusted',
        message: `${path} ${why}: no report is written on top of it; restore the index this controller signed (git history) or remove it knowingly (downstream clusters then refuse the older sequence)`,
      });
    if (text === undefined) throw stalled('is missing but its signature is there');
    const untrusted = signer.verify(path, text, sig);
    if (untrusted !== undefined) throw stalled(`does not verify with this controller's key (${untrusted})`);
    const parsed = parseReportIndex(text);
    if (typeof parsed === 'string') throw stalled(parsed);
    if (parsed.cluster !== cluster) throw stalled(`names cluster ${parsed.cluster}, not ${cluster}`);
    previous = parsed;
  }
  const next = nextReportIndex(previous, cluster, { path: yamlPath, sha256: sha256(yaml) });
  if (!next) return {};
  const out = renderReportIndex(next);
  return { [path]: out, [signaturePath(path)]: signer.sign(path, out) };
}
