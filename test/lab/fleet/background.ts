// Background work of the fleet's simulated kubelets and controllers: fire-and-forget steps and
// delayed steps, whose failures are kept for tests to inspect instead of crashing the lab, and
// which all stop with the fleet.
const RETRY_ATTEMPTS = 30;

export class Background {
  private readonly timers = new Set<NodeJS.Timeout>();
  private stoppedFlag = false;
  /** Errors of background work (a replacement that could not be created, ...). */
  readonly errors: string[] = [];

  get stopped(): boolean {
    return this.stoppedFlag;
  }

  /** Runs `work` after `ms` (a simulated delay: a reschedule, a container's run time). */
  after(ms: number, what: string, work: () => Promise<void>): void {
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      this.run(what, work);
    }, ms);
    this.timers.add(timer);
  }

  run(what: string, work: () => Promise<void>): void {
    if (this.stoppedFlag) return;
    work().catch((err: unknown) => {
      if (!this.stoppedFlag) this.errors.push(`${what}: ${err instanceof Error ? err.message : String(err)}`);
    });
  }

  /**
   * Runs an idempotent step (a status patch, a delete guarded by the pod's UID) and runs it again
   * while it fails, as a kubelet does: an apiserver or etcd restart must not lose it. About a minute
   * (200 ms doubling to 2 s, 30 attempts), longer than any of the lab's restarts; then it is an error.
   * Never for a create: an answer lost after the apiserver took it would make a second object.
   */
  retry(what: string, step: () => Promise<void>, attempt = 0): void {
    if (this.stoppedFlag) return;
    step().catch((err: unknown) => {
      if (this.stoppedFlag) return;
      if (attempt < RETRY_ATTEMPTS)
        this.after(Math.min(200 * 2 ** attempt, 2_000), what, () =>
          Promise.resolve(this.retry(what, step, attempt + 1)),
        );
      else
        this.errors.push(
          `${what}: ${err instanceof Error ? err.message : String(err)} (after ${RETRY_ATTEMPTS} attempts)`,
        );
    });
  }

  stop(): void {
    this.stoppedFlag = true;
    for (const timer of this.timers) clearTimeout(timer);
  }
}
