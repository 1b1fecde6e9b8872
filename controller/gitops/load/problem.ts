// A validation problem, reported as `file:line:col: path.to.field: message`.

export interface Problem {
  file: string;
  /** 1-based */
  line: number;
  /** 1-based */
  column: number;
  /** Field path such as `spec.groups.db.concurrency` or `spec.maintenance.windows[0].days[1]`; '' for the file. */
  path: string;
  message: string;
}

const IDENT = /^[A-Za-z_$][A-Za-z0-9_$-]*$/;

/** Renders a zod/YAML path: numbers as [i], plain names dotted, others quoted in brackets. */
export function formatPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const seg of path) {
    if (typeof seg === 'number') out += `[${seg}]`;
    else if (typeof seg === 'string' && IDENT.test(seg)) out += out === '' ? seg : `.${seg}`;
    else out += `[${JSON.stringify(String(seg))}]`;
  }
  return out;
}

export function formatProblem(p: Problem): string {
  const where = `${p.file}:${p.line}:${p.column}`;
  return p.path === '' ? `${where}: ${p.message}` : `${where}: ${p.path}: ${p.message}`;
}

/** Stable order: by file, then position, then path. */
export function compareProblems(a: Problem, b: Problem): number {
  if (a.file !== b.file) return a.file < b.file ? -1 : 1;
  return a.line - b.line || a.column - b.column || (a.path < b.path ? -1 : a.path > b.path ? 1 : 0);
}
