// A validation problem, reported as `file:line:col: path.to.field: message`.

export interface Problem {
  file: string;
  /** 1-based */
  line: number;
  /** 1-based */
  column: number;
  /** Field path (schemas/field-path.ts) such as `spec.groups.db.concurrency` or `spec.maintenance.windows[0].days[1]`; '' for the file. */
  path: string;
  message: string;
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
