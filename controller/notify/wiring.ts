// Thin glue: the reconcilers' phase-change observers → core/notify decides the events → the
// notifier queues them. Started with the other loops once this replica leads.
import type { NotifyConfig } from '../../schemas/notify.js';
import { jobEvents, planEvents, proposalEvent, type PlanRef, type ProposalRef } from '../core/notify/index.js';
import type { Clock } from '../runtime/clock.js';
import type { LogFn } from '../runtime/log.js';
import type { JobPhaseObserver, PlanPhaseObserver } from '../telemetry/job-observer.js';
import { createNotifier, type NotifierOptions } from './notifier.js';
import { watchWaits, type Watched } from './waiting.js';
import type { JobView, PlanView } from '../kube/views.js';
import { parseGoDuration } from '../../schemas/duration.js';

export interface NotifyWiring {
  job: JobPhaseObserver;
  plan: PlanPhaseObserver;
  /** An auto-update template opened a pull request. */
  proposalOpened: (template: PlanRef, proposal: ProposalRef) => void;
  /** Settles when the receivers' workers stopped. */
  stopped: Promise<void>;
}

export function startNotifications(
  config: NotifyConfig,
  w: {
    cluster: string | undefined;
    clock: Clock;
    log: LogFn;
    onResult: NotifierOptions['onResult'];
    plans: Watched<PlanView>;
    jobs: Watched<JobView>;
  },
  signal: AbortSignal,
): NotifyWiring {
  const notifier = createNotifier({ config, cluster: w.cluster, clock: w.clock, log: w.log, onResult: w.onResult });
  notifier.start(signal);
  // The schema bounds and defaults waitingAfter; the fallback is never used.
  const afterMs = parseGoDuration(config.waitingAfter) ?? 30 * 60_000;
  watchWaits(
    { plans: w.plans, jobs: w.jobs, afterMs, clock: w.clock, notify: (events) => notifier.notify(events) },
    signal,
  );
  w.log('info', 'notifications: receivers started', {
    receivers: config.receivers.map((r) => `${r.name} (${r.type})`),
  });
  const safely = (what: string, fn: () => void): void => {
    try {
      fn();
    } catch (err) {
      // A notification must never fail a reconcile pass.
      w.log('error', 'notifications: could not queue events', {
        what,
        err: err instanceof Error ? err.message : String(err),
      });
    }
  };
  return {
    job: {
      phaseChanged(before, after, job) {
        const spec = job.spec;
        if (!spec) return;
        const ref = {
          name: job.name,
          uid: job.uid,
          plan: spec.patchPlanRef,
          node: spec.nodeName,
          group: spec.group,
          targetTalosVersion: spec.target.talosVersion,
          targetKubernetesVersion: spec.target.kubernetesVersion,
        };
        safely(job.name, () => notifier.notify(jobEvents(ref, before, after, w.clock.now())));
      },
    },
    plan: {
      phaseChanged(before, after, plan) {
        safely(plan.name, () =>
          notifier.notify(planEvents({ name: plan.name, uid: plan.uid }, before, after, w.clock.now())),
        );
      },
    },
    proposalOpened: (template, proposal) => {
      safely(template.name, () => notifier.notify([proposalEvent(template, proposal, w.clock.now())]));
    },
    stopped: notifier.stopped(),
  };
}
