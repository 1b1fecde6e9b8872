// Bounded parallelism for the lab's bulk work (registering thousands of Nodes, placing tens of
// thousands of pods): one request after another would take minutes at 5,000 nodes, all at once
// would swamp the apiserver's connection pool. The first failure is thrown once the others in
// flight have settled, so no work is left running behind the caller's back.
export async function forEachLimit<T>(
  items: Iterable<T>,
  limit: number,
  work: (item: T, index: number) => Promise<void>,
): Promise<void> {
  if (!Number.isInteger(limit) || limit < 1)
    throw new Error(`forEachLimit: limit must be a positive integer, got ${limit}`);
  const iterator = [...items].entries()[Symbol.iterator]();
  let failure: { err: unknown } | undefined;
  const worker = async (): Promise<void> => {
    for (let next = iterator.next(); !next.done && failure === undefined; next = iterator.next()) {
      const [index, item] = next.value;
      try {
        await work(item, index);
      } catch (err) {
        failure ??= { err };
      }
    }
  };
  await Promise.all(Array.from({ length: limit }, worker));
  if (failure) throw failure.err;
}
