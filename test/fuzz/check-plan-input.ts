// The oracle of the loader fuzzer: one hostile file through the shared loader (what the GitOps loop
// runs) and through `kangal-patch validate -o json` in-process (what people run); both must finish
// without throwing, agree exactly, and report every refusal with a position inside the file, a field
// path where there is one, and a readable message. Cost is measured, not asserted, here.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { isScalar, parseAllDocuments } from 'yaml';
import { main } from '../../controller/cli.js';
import { loadPlanSources, type LoadResult, type Problem } from '../../controller/gitops/load/index.js';

export type Outcome = 'plans' | 'problems' | 'skipped' | 'empty';

export interface CheckResult {
  outcome: Outcome;
  /** Wall time of the in-memory load, ms. */
  ms: number;
  /** Heap growth during the in-memory load (allocation not yet collected), bytes. */
  heapBytes: number;
  violations: string[];
}

/** A field path as formatProblem prints it: `spec.groups.db`, `[0]`, `["odd key"]`. */
const PATH =
  /^(?:[A-Za-z_$][A-Za-z0-9_$-]*|\[\d+\]|\["(?:[^"\\]|\\.)*"\])(?:\.[A-Za-z_$][A-Za-z0-9_$-]*|\[\d+\]|\["(?:[^"\\]|\\.)*"\])*$/;
/** Signs of a message built from a value that was not meant to be printed. */
const GARBLED = /\bundefined\b|\[object Object\]|\[native code\]|function \w*\(/;

function lineCount(bytes: Uint8Array): number {
  let n = 1;
  for (const b of bytes) if (b === 0x0a || b === 0x0d) n++;
  return n;
}

function problemViolations(p: Problem, file: string, lines: number): string[] {
  const at = `${p.line}:${p.column} ${JSON.stringify(p.path)} ${JSON.stringify(p.message.slice(0, 200))}`;
  return [...positionViolations(p, file, lines, at), ...textViolations(p, at)];
}

/** The problem points into this file: its name, a line within it, a positive column. */
function positionViolations(p: Problem, file: string, lines: number, at: string): string[] {
  const out: string[] = [];
  if (p.file !== file) out.push(`problem names file ${JSON.stringify(p.file)}, not ${file}: ${at}`);
  if (!Number.isInteger(p.line) || p.line < 1 || p.line > lines) out.push(`line outside the file (1..${lines}): ${at}`);
  if (!Number.isInteger(p.column) || p.column < 1) out.push(`column not a positive integer: ${at}`);
  return out;
}

/** The problem reads well: a message that is neither empty nor garbled, a well-formed field path. */
function textViolations(p: Problem, at: string): string[] {
  const out: string[] = [];
  if (typeof p.message !== 'string' || p.message.trim() === '') out.push(`empty message: ${at}`);
  else if (GARBLED.test(p.message) && !/"[^"]*\bundefined\b[^"]*"/.test(p.message)) out.push(`garbled message: ${at}`);
  if (typeof p.path !== 'string' || (p.path !== '' && !PATH.test(p.path))) out.push(`malformed field path: ${at}`);
  return out;
}

/** The file holds nothing but empty or null documents (comments, `---`, `null`): the only input allowed to give no outcome. */
function onlyEmptyDocuments(bytes: Uint8Array): boolean {
  const text = new TextDecoder().decode(bytes);
  return parseAllDocuments(text).every(
    (d) => d.contents === null || (isScalar(d.contents) && d.contents.value === null),
  );
}

function outcomeOf(r: LoadResult): Outcome {
  if (r.problems.length > 0) return 'problems';
  if (r.plans.length > 0) return 'plans';
  return r.skipped > 0 ? 'skipped' : 'empty';
}

function loadedViolations(r: LoadResult, inputBytes: number): string[] {
  const out: string[] = [];
  for (const p of r.plans) {
    let json: string;
    try {
      json = JSON.stringify(p.raw);
    } catch (e) {
      out.push(`accepted plan ${p.plan.metadata.name} cannot be serialised for apply: ${(e as Error).message}`);
      continue;
    }
    // Aliases may repeat a value, but never blow it up: what is applied stays near what was written.
    if (json.length > 16 * inputBytes + 4096)
      out.push(`accepted plan ${p.plan.metadata.name} expands ${inputBytes} bytes to ${json.length}`);
  }
  return out;
}

export async function checkPlanInput(bytes: Uint8Array, dir: string, viaCli: boolean): Promise<CheckResult> {
  const file = join(dir, 'plan.yaml');
  const violations: string[] = [];
  const heapBefore = process.memoryUsage().heapUsed;
  const start = performance.now();
  let result: LoadResult;
  try {
    result = loadPlanSources([{ file, content: bytes }]);
  } catch (e) {
    return {
      outcome: 'problems',
      ms: performance.now() - start,
      heapBytes: 0,
      violations: [`loader threw: ${(e as Error).stack ?? String(e)}`],
    };
  }
  const ms = performance.now() - start;
  const heapBytes = Math.max(0, process.memoryUsage().heapUsed - heapBefore);
  const lines = lineCount(bytes);
  for (const p of result.problems) violations.push(...problemViolations(p, file, lines));
  violations.push(...loadedViolations(result, bytes.byteLength));
  const outcome = outcomeOf(result);
  if (outcome === 'empty' && !onlyEmptyDocuments(bytes))
    violations.push('a non-empty file gave no plan, no skip and no problem');
  if (viaCli) violations.push(...(await cliViolations(bytes, file, result)));
  return { outcome, ms, heapBytes, violations };
}

/** `kangal-patch validate -o json <file>` must exit 0 or 1 and print exactly the loader's problems. */
async function cliViolations(bytes: Uint8Array, file: string, loaded: LoadResult): Promise<string[]> {
  await writeFile(file, bytes);
  let out = '';
  let code: number;
  try {
    code = await main(['validate', '-o', 'json', file], { out: (t) => (out += t), err: () => undefined });
  } catch (e) {
    return [`validate threw: ${(e as Error).stack ?? String(e)}`];
  }
  const violations: string[] = [];
  const expected = loaded.problems.length === 0 ? 0 : 1;
  if (code !== expected)
    violations.push(`validate exited ${code}, expected ${expected} for ${loaded.problems.length} problem(s)`);
  try {
    const printed = JSON.parse(out) as Problem[];
    if (JSON.stringify(printed) !== JSON.stringify(loaded.problems, ['file', 'line', 'column', 'path', 'message'])) {
      violations.push(`validate printed other problems than the loader found: ${out.slice(0, 500)}`);
    }
  } catch (e) {
    violations.push(`validate -o json printed no JSON (${(e as Error).message}): ${out.slice(0, 200)}`);
  }
  return violations;
}
