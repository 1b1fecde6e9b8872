// The one plan loader, shared by `kangal-patch validate` and the GitOps loop. It takes file contents
// (from disk or from a git tree) and returns validated plans plus every problem found. No I/O here.
import type { z } from 'zod';
import { DEFAULT_OPERATOR_NAMESPACE } from '../../../schemas/api.js';
import { planDocumentSchema } from '../../../schemas/document.js';
import { formatPath } from '../../../schemas/field-path.js';
import type { PatchPlanDocument } from '../../../schemas/patchplan.js';
import { expressionProblems } from '../../health-checks/cel.js';
import { routeDocument } from './document.js';
import { issuesToProblems, parseErrorMap } from './issues.js';
import { DEFAULT_LIMITS, type LoadLimits } from './limits.js';
import { locate } from './locate.js';
import { countDocumentStarts, decodePlanBytes, findExcessiveNesting } from './prescan.js';
import { compareProblems, type Problem } from './problem.js';
import { parseYamlFile, type ParsedDocument, type ParsedFile } from './yaml.js';

export { formatProblem, type Problem } from './problem.js';
export { DEFAULT_LIMITS } from './limits.js';

export interface PlanSource {
  file: string;
  content: Uint8Array | string;
}

export interface LoadedPlan {
  file: string;
  line: number;
  column: number;
  /** The plan with defaults applied. */
  plan: PatchPlanDocument;
  /** The document as the file wrote it (no defaults filled in): what the GitOps sync applies. */
  raw: Record<string, unknown>;
}

export interface LoadOptions {
  /** Namespace the operator runs in; talosConfig.secretRef.namespace must equal it. */
  operatorNamespace?: string;
  limits?: Partial<LoadLimits>;
  /** A name defined twice: drop every definition and report each file (the GitOps loop); default: keep the first. */
  rejectDuplicates?: boolean;
}

export interface LoadResult {
  plans: LoadedPlan[];
  problems: Problem[];
  /** Documents of other kinds (e.g. a Secret next to a plan), ignored. */
  skipped: number;
}

/** Loads a set of files; a plan name defined twice is a problem and only the first is kept. */
export function loadPlanSources(sources: readonly PlanSource[], options: LoadOptions = {}): LoadResult {
  const result: LoadResult = { plans: [], problems: [], skipped: 0 };
  const byName = new Map<string, LoadedPlan>();
  const dropped = new Set<string>();
  for (const source of sources) {
    const one = loadPlanFile(source, options);
    result.problems.push(...one.problems);
    result.skipped += one.skipped;
    for (const p of one.plans) {
      const first = byName.get(p.plan.metadata.name);
      if (first) {
        result.problems.push({
          file: p.file,
          line: p.line,
          column: p.column,
          path: 'metadata.name',
          message: `duplicate PatchPlan name "${p.plan.metadata.name}" (also defined at ${first.file}:${first.line})`,
        });
        if (options.rejectDuplicates && !dropped.has(first.plan.metadata.name)) {
          dropped.add(first.plan.metadata.name);
          result.problems.push({
            file: first.file,
            line: first.line,
            column: first.column,
            path: 'metadata.name',
            message: `duplicate PatchPlan name "${first.plan.metadata.name}" (also defined at ${p.file}:${p.line}); neither is applied`,
          });
        }
        continue;
      }
      byName.set(p.plan.metadata.name, p);
      result.plans.push(p);
    }
  }
  if (dropped.size > 0) result.plans = result.plans.filter((p) => !dropped.has(p.plan.metadata.name));
  result.problems.sort(compareProblems);
  return result;
}

export function loadPlanFile(source: PlanSource, options: LoadOptions = {}): LoadResult {
  const limits = { ...DEFAULT_LIMITS, ...options.limits };
  const schema = planDocumentSchema(options.operatorNamespace ?? DEFAULT_OPERATOR_NAMESPACE);
  const result: LoadResult = { plans: [], problems: [], skipped: 0 };

  const bytes = typeof source.content === 'string' ? new TextEncoder().encode(source.content) : source.content;
  const decoded = decodePlanBytes(bytes, limits.maxBytes);
  if (!decoded.ok) {
    result.problems.push({ file: source.file, line: 1, column: 1, path: '', message: decoded.message });
    return result;
  }
  const deep = findExcessiveNesting(decoded.text, limits.maxDepth);
  if (deep !== undefined) {
    const message = `YAML nesting is deeper than ${limits.maxDepth} levels`;
    result.problems.push({ file: source.file, ...textPosition(decoded.text, deep), path: '', message });
    return result;
  }
  const starts = countDocumentStarts(decoded.text);
  if (starts > limits.maxDocuments) {
    result.problems.push({
      file: source.file,
      line: 1,
      column: 1,
      path: '',
      message: `file has at least ${starts} YAML documents, more than the limit of ${limits.maxDocuments}`,
    });
    return result;
  }
  const parsed = parseYamlFile(decoded.text, limits);
  for (const p of parsed.problems)
    result.problems.push({ file: source.file, ...lineCol(parsed, p.offset), path: '', message: p.message });
  for (const document of parsed.documents) checkDocument(document, { file: source.file, parsed, schema, result });
  return result;
}

/** One file's documents are checked against the same schema and reported into the same result. */
interface FileCheck {
  file: string;
  parsed: ParsedFile;
  schema: z.ZodType<PatchPlanDocument>;
  result: LoadResult;
}

type ProblemAt = (offset: number, path: string, message: string) => void;

function checkDocument(document: ParsedDocument, check: FileCheck): void {
  const { file, parsed, result } = check;
  const { doc, value, problems } = document;
  const problemAt: ProblemAt = (offset, path, message) =>
    result.problems.push({ file, ...lineCol(parsed, offset), path, message });
  if (problems.length > 0) {
    for (const p of problems) problemAt(p.offset, '', p.message);
    return;
  }
  const route = routeDocument(value);
  if (route.action === 'skip') {
    if (value !== null && value !== undefined) result.skipped++;
    return;
  }
  if (route.action === 'reject') {
    problemAt(locate(doc, route.path), formatPath(route.path), route.message);
    return;
  }
  validatePlanDocument(document, check, problemAt);
}

/** A PatchPlan document: schema and health check expressions; a plan when both pass, problems otherwise. */
function validatePlanDocument(document: ParsedDocument, check: FileCheck, problemAt: ProblemAt): void {
  const { file, parsed, schema, result } = check;
  const { doc, value } = document;
  const checked = schema.safeParse(value, { error: parseErrorMap });
  // Health check expressions are compiled here, so a bad one refuses the plan like any invalid field.
  const celProblems = checked.success ? expressionProblems(checked.data.spec) : [];
  for (const p of celProblems) problemAt(locate(doc, p.path), formatPath(p.path), p.message);
  if (checked.success && celProblems.length > 0) return;
  if (checked.success) {
    result.plans.push({
      file,
      ...lineCol(parsed, locate(doc, [])),
      plan: checked.data,
      raw: value as Record<string, unknown>,
    });
    return;
  }
  for (const p of issuesToProblems(schema, checked.error.issues)) {
    problemAt(locate(doc, p.path, p.atKey), formatPath(p.path), p.message);
  }
}

function lineCol(parsed: ParsedFile, offset: number): { line: number; column: number } {
  const { line, col } = parsed.lineCounter.linePos(offset);
  return { line, column: col };
}

/** Line/column in text that was never parsed (problems found before parsing). */
function textPosition(text: string, offset: number): { line: number; column: number } {
  const before = text.slice(0, offset);
  return { line: before.split('\n').length, column: offset - before.lastIndexOf('\n') };
}
