// Background work of the fleet's simulated kubelets and controllers: fire-and-forget steps and
// delayed steps, whose failures are kept for tests to inspect instead of crashing the lab, and
// which all stop with the fleet.
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

  stop(): void {
    this.stoppedFlag = true;
    for (const timer of this.timers) clearTimeout(timer);
  }
}
