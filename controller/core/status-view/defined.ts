// The status document leaves a field out rather than writing it undefined, so it reads the same
// as JSON, as YAML and in a deepEqual. Pure.

/** `o` without its undefined fields. */
export function defined<T extends object>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}
