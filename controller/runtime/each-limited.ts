// Runs an async step for every item with at most `limit` steps in flight (keeping the order in
// which items start): the bounded fan-out the preflight (nodes) and the GitOps sync (plans) use.
export async function eachLimited<T>(
  items: readonly T[],
  limit: number,
  step: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const item = items[next++] as T;
      await step(item);
    }
  };
  await Promise.all(Array.from({ length: Math.min(Math.max(1, limit), items.length) }, worker));
}
