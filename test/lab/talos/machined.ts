// What machined itself reports about a simulated node: its system services (MachineService.ServiceList,
// the Services COSI resources) and its runtime events (MachineService.Events): sequences, phases,
// tasks, service state changes and machine status changes, as a booted, rebooting or upgrading node
// publishes them. One Machined per boot: a reboot starts a fresh one (machined's state is in memory).
//
// Upstream: internal/app/machined/pkg/system/service_runner.go (UpdateState, healthUpdate, AsProto),
// system/events/events.go (states, 64 events kept per service), system/health (ServiceHealth),
// runtime/v1alpha1/v1alpha1_controller.go (SequenceEvent START/STOP, NOOP with an error; PhaseEvent,
// TaskEvent around each phase and task), v1alpha1_sequencer.go / v1alpha1_sequencer_tasks.go (which
// services start when: udevd, machined, auditd, syslogd, containerd in the initialize sequence with
// the dashboard and apid; cri, trustd and etcd (control plane) and kubelet from startAllServices;
// stopServicesForUpgrade stops cri and udevd and trustd with what depends on them, stopAllServices the rest).
import type { Code } from '../../../proto/gen/common/common.js';
import {
  MachineStatusEvent,
  MachineStatusEvent_MachineStage,
  PhaseEvent,
  PhaseEvent_Action,
  SequenceEvent,
  SequenceEvent_Action,
  type ServiceHealth,
  type ServiceInfo,
  ServiceStateEvent,
  ServiceStateEvent_Action,
  TaskEvent,
  TaskEvent_Action,
} from '../../../proto/gen/machine/machine.js';
import type { NodeRole } from '../fleet/types.js';
import { EventLog } from './events.js';
import { versionAtLeast } from './versions.js';

/** Go's zero time.Time, as timestamppb.New encodes a health that never changed. */
const ZERO_TIME = new Date('0001-01-01T00:00:00Z');

/** How a service runs, which decides the message it logs when it starts (system/runner/...). */
type Runner = 'goroutine' | 'process' | 'containerd';

interface ServiceDef {
  id: string;
  runner: Runner;
  /** Started by the initialize sequence (early services), else by startAllServices / the kubelet controller. */
  early: boolean;
  /** Implements HealthcheckedService (the dashboard does not: its health stays unknown). */
  health: boolean;
  /** Stopped by stopServicesForUpgrade (cri, udevd, trustd and their dependents), else only by stopAllServices. */
  ephemeral: boolean;
}

const def = (id: string, runner: Runner, flags: Partial<Omit<ServiceDef, 'id' | 'runner'>> = {}): ServiceDef => ({
  id,
  runner,
  early: flags.early ?? false,
  health: flags.health ?? true,
  ephemeral: flags.ephemeral ?? false,
});

const SERVICES: Record<string, ServiceDef> = {
  apid: def('apid', 'containerd', { early: true }),
  auditd: def('auditd', 'goroutine', { early: true }),
  containerd: def('containerd', 'process', { early: true }),
  cri: def('cri', 'process', { ephemeral: true }),
  dashboard: def('dashboard', 'process', { early: true, health: false }),
  etcd: def('etcd', 'containerd', { ephemeral: true }),
  kubelet: def('kubelet', 'containerd', { ephemeral: true }),
  machined: def('machined', 'goroutine', { early: true }),
  syslogd: def('syslogd', 'goroutine', { early: true }),
  trustd: def('trustd', 'containerd', { ephemeral: true }),
  udevd: def('udevd', 'process', { early: true, ephemeral: true }),
};

/**
 * The services a node of this version and role runs, sorted by ID as ServiceList lists them: syslogd
 * exists in every simulated version (since v1.7, "feat: add basic syslog implementation"), auditd
 * from v1.9 ("feat: add auditd service"); etcd and trustd only on a control plane; the dashboard on
 * every platform but SBCs (docs: interactive dashboard).
 */
function serviceIds(talosVersion: string, role: NodeRole): string[] {
  return Object.keys(SERVICES).filter((id) => {
    if (id === 'etcd' || id === 'trustd') return role === 'controlplane';
    if (id === 'auditd') return versionAtLeast(talosVersion, 9, 'alpha.0');
    return true;
  });
}

type State = 'Initialized' | 'Preparing' | 'Waiting' | 'Running' | 'Stopping' | 'Finished' | 'Failed' | 'Skipped';

const ACTION: Record<State, ServiceStateEvent_Action> = {
  Initialized: ServiceStateEvent_Action.INITIALIZED,
  Preparing: ServiceStateEvent_Action.PREPARING,
  Waiting: ServiceStateEvent_Action.WAITING,
  Running: ServiceStateEvent_Action.RUNNING,
  Stopping: ServiceStateEvent_Action.STOPPING,
  Finished: ServiceStateEvent_Action.FINISHED,
  Failed: ServiceStateEvent_Action.FAILED,
  Skipped: ServiceStateEvent_Action.SKIPPED,
};

/** The events a service runner keeps (events.MaxEventsToKeep). */
const MAX_SERVICE_EVENTS = 64;

interface Health {
  /** undefined: not checked yet (ServiceHealth.unknown). */
  healthy: boolean | undefined;
  lastMessage: string;
  lastChange: Date;
}

interface ServiceRunner {
  def: ServiceDef;
  state: State;
  events: { msg: string; state: State; ts: Date }[];
  health: Health;
}

const healthProto = (h: Health | undefined): ServiceHealth => ({
  unknown: h?.healthy === undefined,
  healthy: h?.healthy === true,
  lastMessage: h?.lastMessage ?? '',
  lastChange: h?.lastChange ?? ZERO_TIME,
});

let nextPid = 1200;

/** The kubelet's health check (GET /healthz) while it starts. */
const KUBELET_NOT_LISTENING =
  'Get "http://127.0.0.1:10248/healthz": dial tcp 127.0.0.1:10248: connect: connection refused';

/** The message a runner logs once its service runs (goroutine, process and containerd runners). */
function startedMessage(d: ServiceDef): string {
  const pid = nextPid++;
  if (d.runner === 'goroutine') return 'Service started as goroutine';
  if (d.runner === 'process') return `Process Process(["/bin/${d.id}"]) started with PID ${pid}`;
  return `Started task ${d.id} (PID ${pid}) for container ${d.id}`;
}

/** The machine stage as MachineStatusEvent names it, from the simulator's phase (none while down). */
const STAGES: Record<string, MachineStatusEvent_MachineStage> = {
  booting: MachineStatusEvent_MachineStage.BOOTING,
  running: MachineStatusEvent_MachineStage.RUNNING,
  rebooting: MachineStatusEvent_MachineStage.REBOOTING,
  upgrading: MachineStatusEvent_MachineStage.UPGRADING,
};

/** One boot of machined on a node: its services and its event stream. */
export class Machined {
  readonly log = new EventLog();
  private readonly services = new Map<string, ServiceRunner>();
  private lastStatus = '';

  constructor(talosVersion: string, role: NodeRole) {
    for (const id of serviceIds(talosVersion, role)) {
      const d = SERVICES[id];
      if (d)
        this.services.set(id, {
          def: d,
          state: 'Initialized',
          events: [],
          health: { healthy: undefined, lastMessage: '', lastChange: ZERO_TIME },
        });
    }
  }

  // -- services ---------------------------------------------------------------------------------

  /** ServiceRunner.UpdateState: the new state in the service's history and as a ServiceStateEvent. */
  private update(s: ServiceRunner, state: State, message: string): void {
    const ts = new Date();
    s.state = state;
    s.events.push({ msg: message, state, ts });
    if (s.events.length > MAX_SERVICE_EVENTS) s.events.shift();
    // A state change carries an unset health (unknown), as events.ServiceEvent.AsProto sends it.
    this.publishService(s, message, undefined);
  }

  /** ServiceRunner.healthUpdate: only a running service's health change is recorded and published. */
  private setHealth(s: ServiceRunner, healthy: boolean, message: string): void {
    if (!s.def.health || s.state !== 'Running' || s.health.healthy === healthy) return;
    s.health = { healthy, lastMessage: message, lastChange: new Date() };
    const msg = healthy ? 'Health check successful' : `Health check failed: ${message}`;
    s.events.push({ msg, state: s.state, ts: s.health.lastChange });
    if (s.events.length > MAX_SERVICE_EVENTS) s.events.shift();
    this.publishService(s, msg, s.health);
  }

  private publishService(s: ServiceRunner, message: string, health: Health | undefined): void {
    const event = ServiceStateEvent.encode({
      service: s.def.id,
      action: ACTION[s.state],
      message,
      health: healthProto(health),
    }).finish();
    this.log.publish('machine.ServiceStateEvent', event);
  }

  /** A service starts: it prepares, runs, and passes its first health check (unless `healthy` is false). */
  private start(s: ServiceRunner, healthy = true): void {
    this.update(s, 'Preparing', 'Running pre state');
    this.update(s, 'Preparing', 'Creating service runner');
    this.update(s, 'Running', startedMessage(s.def));
    if (healthy) this.setHealth(s, true, '');
  }

  private stop(s: ServiceRunner): void {
    if (s.state !== 'Running' && s.state !== 'Waiting' && s.state !== 'Preparing') return;
    this.update(s, 'Stopping', 'Sending SIGTERM to service');
    this.update(s, 'Finished', 'Service finished successfully');
  }

  private each(pick: (s: ServiceRunner) => boolean, act: (s: ServiceRunner) => void): void {
    for (const s of this.services.values()) if (pick(s)) act(s);
  }

  /** ServiceList's services, sorted by ID (system.Services List), each as ServiceRunner.AsProto. */
  serviceInfos(): ServiceInfo[] {
    return [...this.services.values()].map((s) => ({
      id: s.def.id,
      state: s.state,
      events: { events: s.events.map((e) => ({ msg: e.msg, state: e.state, ts: e.ts })) },
      health: healthProto(s.health),
    }));
  }

  /** The Services COSI resources machined's ServiceController keeps: one per running service (not the kubelet's). */
  runningServices(): { id: string; healthy: boolean; unknown: boolean }[] {
    return [...this.services.values()]
      .filter((s) => s.state === 'Running' && s.def.id !== 'kubelet')
      .map((s) => ({ id: s.def.id, healthy: s.health.healthy === true, unknown: s.health.healthy === undefined }));
  }

  // -- sequences --------------------------------------------------------------------------------

  sequence(name: string, action: SequenceEvent_Action, actorId = ''): void {
    this.log.publish(
      'machine.SequenceEvent',
      SequenceEvent.encode({ sequence: name, action, error: undefined }).finish(),
      actorId,
    );
  }

  /** A sequence that failed (code FATAL, "sequence failed: …") or was refused (LOCKED, without the caller's actor ID). */
  sequenceError(name: string, error: { code: Code; message: string }, actorId = ''): void {
    this.log.publish(
      'machine.SequenceEvent',
      SequenceEvent.encode({
        sequence: name,
        action: SequenceEvent_Action.NOOP,
        error: { code: error.code, message: error.message, details: [] },
      }).finish(),
      actorId,
    );
  }

  /** A phase with one task, as the controller runs it: PhaseEvent START, TaskEvent START, the task, TaskEvent STOP, PhaseEvent STOP. */
  phase(name: string, task: string, actorId: string, run: () => void = () => undefined): void {
    const phase = (action: PhaseEvent_Action): void => {
      this.log.publish('machine.PhaseEvent', PhaseEvent.encode({ phase: name, action }).finish(), actorId);
    };
    const taskEvent = (action: TaskEvent_Action): void => {
      this.log.publish('machine.TaskEvent', TaskEvent.encode({ task, action }).finish(), actorId);
    };
    phase(PhaseEvent_Action.START);
    taskEvent(TaskEvent_Action.START);
    run();
    taskEvent(TaskEvent_Action.STOP);
    phase(PhaseEvent_Action.STOP);
  }

  /** MachineStatusController: a MachineStatusEvent whenever the stage or readiness changes (no actor). */
  machineStatus(phase: string, ready: boolean): void {
    const stage = STAGES[phase];
    const key = `${phase}/${ready}`;
    if (stage === undefined || key === this.lastStatus) return;
    this.lastStatus = key;
    const unmetConditions = ready ? [] : [{ name: 'nodeReady', reason: 'node not ready' }];
    this.log.publish(
      'machine.MachineStatusEvent',
      MachineStatusEvent.encode({ stage, status: { ready, unmetConditions } }).finish(),
    );
  }

  // -- what the node goes through ---------------------------------------------------------------

  /** The boot begins: the initialize sequence starts the early services, the boot sequence starts; the rest waits for cri. */
  booting(): void {
    this.sequence('initialize', SequenceEvent_Action.START);
    this.each(
      (s) => s.def.early,
      (s) => this.start(s),
    );
    this.sequence('initialize', SequenceEvent_Action.STOP);
    this.sequence('boot', SequenceEvent_Action.START);
    this.each(
      (s) => !s.def.early,
      (s) => this.update(s, 'Waiting', 'Waiting for service "cri" to be "up"'),
    );
  }

  /** The boot ends: startAllServices runs cri, trustd, etcd and the kubelet; the boot sequence is done. */
  booted(): void {
    this.phase('startEverything', 'startAllServices', '', () =>
      this.each(
        (s) => !s.def.early,
        (s) => this.start(s),
      ),
    );
    this.sequence('boot', SequenceEvent_Action.STOP);
  }

  /** stopServicesForUpgrade: cri, udevd, trustd and what depends on them (etcd, the kubelet). */
  stopEphemeral(actorId: string): void {
    this.phase('stopServices', 'stopServicesForUpgrade', actorId, () =>
      this.each(
        (s) => s.def.ephemeral,
        (s) => this.stop(s),
      ),
    );
  }

  /** The end of a reboot or upgrade sequence: stopAllServices, then the reboot task (the process ends there). */
  shutdown(actorId: string): void {
    this.phase('stopEverything', 'stopAllServices', actorId, () =>
      this.each(
        () => true,
        (s) => this.stop(s),
      ),
    );
    this.log.publish(
      'machine.PhaseEvent',
      PhaseEvent.encode({ phase: 'reboot', action: PhaseEvent_Action.START }).finish(),
      actorId,
    );
    this.log.publish(
      'machine.TaskEvent',
      TaskEvent.encode({ task: 'reboot', action: TaskEvent_Action.START }).finish(),
      actorId,
    );
  }

  /** A failed sequence left the node running: the stopped services start again. */
  restartStopped(): void {
    this.each(
      (s) => s.state === 'Finished',
      (s) => this.start(s),
    );
  }

  /** The kubelet service as KubeletServiceController restarts it: stopped, running but failing its health check, healthy. */
  kubelet(state: 'stopped' | 'starting' | 'running'): void {
    const s = this.services.get('kubelet');
    if (!s) return;
    if (state === 'stopped') return this.stop(s);
    if (s.state !== 'Running') this.start(s, false);
    this.setHealth(s, state === 'running', state === 'running' ? '' : KUBELET_NOT_LISTENING);
  }
}
