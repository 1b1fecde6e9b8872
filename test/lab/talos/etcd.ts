// The simulated etcd cluster behind the control-plane nodes: one member per control-plane node
// (uint64 ID, name = node name, peer/client URLs, learner flag), one leader, a raft term, raft
// index and applied index advancing with time, DB size / in use, alarms (NOSPACE, CORRUPT).
//
// A member follows its node (SimNode.phase): it stops when the node starts shutting down
// (`upgrading` or `rebooting`: Talos stops etcd with the services), starts when the node boots
// (API up), is healthy `etcdHealthyMs` later, and from then catches up with the leader's raft index
// over `etcdCatchUpMs` (linearly from the index it stopped at), keeping its ID and data.
//
// The leader is the first member in list order unless set; when the leader stops, the first healthy
// voting member in list order is elected (term + 1), if a quorum of voters is healthy.
//
// The record (`record()`) notes, from the observer's side, every interval in which fewer than a
// quorum of voting members were healthy (with its cause: a member down, or a `quorumLost` fault)
// and every leader change, so a test judges the controller without trusting it.
//
// Faults per member (NodeFaults.etcd): `unhealthy` (isolated: running, no leader seen, raft index
// frozen, not counted healthy), `lagBy` (raft index behind the leader by N while set), `alarm`
// (raised once when set; EtcdAlarmDisarm clears it), `learner`, `notStarted` (listed with an empty
// name, as a member added but never started), `staleMemberList` (this node's member list misses the
// last member: the lists disagree), `forfeitHangs` (EtcdForfeitLeadership waits until the fault is
// cleared or the caller gives up); cluster-wide `quorumLost` (no leader anywhere).
import { createHash } from 'node:crypto';
import { status as GrpcStatus } from '@grpc/grpc-js';
import { RpcError, type SimNode, type TalosSimTimings } from './node.js';

export type EtcdAlarmType = 'NOSPACE' | 'CORRUPT';

export interface EtcdMemberFaults {
  unhealthy?: boolean;
  lagBy?: number;
  alarm?: EtcdAlarmType;
  learner?: boolean;
  notStarted?: boolean;
  staleMemberList?: boolean;
  /** EtcdForfeitLeadership on this node hangs (the leader transfer never completes) until the caller's deadline or the fault is cleared. */
  forfeitHangs?: boolean;
}

type EtcdMemberState = 'down' | 'starting' | 'healthy';

export interface EtcdMemberView {
  id: string;
  /** The etcd member name (the node's name); '' when the `notStarted` fault holds. */
  name: string;
  node: string;
  peerUrls: string[];
  clientUrls: string[];
  isLearner: boolean;
  state: EtcdMemberState;
  /** Healthy for quorum: started, health check passing, not isolated, no quorum-lost fault. */
  healthy: boolean;
  raftIndex: number;
  raftAppliedIndex: number;
  alarms: EtcdAlarmType[];
}

export interface QuorumLoss {
  from: number;
  /** undefined while still lost. */
  to: number | undefined;
  healthy: number;
  voters: number;
  /** Names of the voting members not healthy when it began. */
  unhealthy: string[];
  cause: 'members' | 'fault';
}

export interface LeaderChange {
  at: number;
  /** Member (node) name; undefined: no leader. */
  leader: string | undefined;
  term: number;
  why: string;
}

export interface EtcdRecord {
  quorumLosses: QuorumLoss[];
  leaders: LeaderChange[];
}

interface Member {
  id: string;
  node: SimNode;
  state: EtcdMemberState;
  /** Raft index the member had when it stopped (or became isolated). */
  frozenIndex: number;
  /** When it became healthy (start of its catch-up). */
  healthySince: number;
  /** Index it caught up from. */
  catchUpFrom: number;
  alarms: Set<EtcdAlarmType>;
  /** The alarm a fault raised last, so it is raised once per setting. */
  raisedAlarm: EtcdAlarmType | undefined;
  /** The `unhealthy` fault held when faults last changed. */
  isolated: boolean;
  epoch: number;
}

/** A uint64 member ID derived from the node name (stable across labs), as a decimal string. */
export function memberIdOf(name: string): string {
  const h = createHash('sha256').update(`etcd-member/${name}`).digest();
  const id = h.readBigUInt64BE(0) | (1n << 63n); // always above 2^53: exercises exact uint64 handling
  return id.toString();
}

/** The etcd server version Talos runs by default (DefaultEtcdVersion). */
function etcdVersionFor(talosVersion: string): string {
  const m = /^v?1\.(\d+)\./.exec(talosVersion);
  const minor = m ? Number(m[1]) : 13;
  return minor >= 14 ? '3.7.1' : minor === 13 ? '3.6.12' : '3.6.11';
}

export class EtcdCluster {
  private readonly members: Member[] = [];
  private leaderId: string | undefined;
  private term = 2;
  private readonly t0 = Date.now();
  private readonly baseIndex = 1_000_000;
  private quorumLostFault = false;
  private readonly losses: QuorumLoss[] = [];
  private readonly leaders: LeaderChange[] = [];
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly waiters = new Set<() => void>();
  private stopped = false;

  constructor(
    nodes: readonly SimNode[],
    private readonly timings: () => TalosSimTimings,
  ) {
    for (const node of nodes) {
      if (node.role !== 'controlplane') continue;
      const m: Member = {
        id: memberIdOf(node.name),
        node,
        state: node.phase === 'running' || node.phase === 'booting' ? 'healthy' : 'down',
        frozenIndex: this.baseIndex,
        healthySince: this.t0,
        catchUpFrom: this.baseIndex,
        alarms: new Set(),
        raisedAlarm: undefined,
        isolated: false,
        epoch: 0,
      };
      this.members.push(m);
      node.events.on('change', () => this.follow(m));
    }
    this.elect('initial election');
    this.check();
  }

  get size(): number {
    return this.members.length;
  }

  /** The cluster's (leader's) raft index now. */
  clusterIndex(now = Date.now()): number {
    return this.baseIndex + Math.floor(((now - this.t0) * this.timings().etcdEntriesPerSecond) / 1000);
  }

  private faults(m: Member): EtcdMemberFaults {
    return m.node.faults.etcd ?? {};
  }

  private isVoter(m: Member): boolean {
    return !this.faults(m).learner;
  }

  /** Running with its health check passing (isolation and the quorum fault aside). */
  private isUp(m: Member): boolean {
    return m.state === 'healthy';
  }

  private isHealthy(m: Member): boolean {
    return this.isUp(m) && !this.faults(m).unhealthy && !this.quorumLostFault && !this.noQuorum();
  }

  /** Voting members up and connected to each other, against the quorum of voters. */
  private votersUp(): { up: Member[]; voters: Member[] } {
    const voters = this.members.filter((m) => this.isVoter(m));
    return { up: voters.filter((m) => this.isUp(m) && !this.faults(m).unhealthy), voters };
  }

  private noQuorum(): boolean {
    const { up, voters } = this.votersUp();
    return voters.length > 0 && up.length < Math.floor(voters.length / 2) + 1;
  }

  /** The member's raft index now, isolation aside: frozen while down, then catching up linearly. */
  private connectedIndex(m: Member, now: number): number {
    if (m.state !== 'healthy') return m.frozenIndex;
    const cluster = this.clusterIndex(now);
    const { etcdCatchUpMs } = this.timings();
    const progress = etcdCatchUpMs <= 0 ? 1 : Math.min(1, (now - m.healthySince) / etcdCatchUpMs);
    const caughtUp = Math.floor(m.catchUpFrom + (cluster - m.catchUpFrom) * progress);
    // A lag fault holds the member that far behind (it does not roll back what it had already applied in etcd; here it simply reads lower).
    return Math.max(0, caughtUp - Math.max(0, this.faults(m).lagBy ?? 0));
  }

  /** An isolated member (`unhealthy`) stays at the index it had when it was cut off. */
  private raftIndexOf(m: Member, now = Date.now()): number {
    return this.faults(m).unhealthy && m.state === 'healthy' ? m.frozenIndex : this.connectedIndex(m, now);
  }

  private member(node: SimNode): Member | undefined {
    return this.members.find((m) => m.node === node);
  }

  /** A member's node changed phase: stop, start, become healthy. */
  private follow(m: Member): void {
    const phase = m.node.phase;
    if ((phase === 'upgrading' || phase === 'rebooting' || phase === 'down') && m.state !== 'down') {
      m.frozenIndex = this.raftIndexOf(m);
      m.state = 'down';
      m.epoch++;
      this.changed(`${m.node.name} stopped`);
    } else if ((phase === 'booting' || phase === 'running') && m.state === 'down') {
      m.state = 'starting';
      const epoch = ++m.epoch;
      this.changed(`${m.node.name} starting`);
      this.after(this.timings().etcdHealthyMs, () => {
        if (m.epoch !== epoch || m.state !== 'starting') return;
        m.state = 'healthy';
        m.healthySince = Date.now();
        m.catchUpFrom = m.frozenIndex;
        this.changed(`${m.node.name} healthy`);
      });
    }
  }

  private after(ms: number, fn: () => void): void {
    if (this.stopped) return;
    const t = setTimeout(() => {
      this.timers.delete(t);
      if (!this.stopped) fn();
    }, ms);
    this.timers.add(t);
  }

  /** Elects a leader if there is none (or it is not healthy), as raft would; records the change. */
  private elect(why: string): void {
    const current = this.members.find((m) => m.id === this.leaderId);
    if (current && this.isHealthy(current) && this.isVoter(current)) return;
    const next =
      this.quorumLostFault || this.noQuorum()
        ? undefined
        : this.members.find((m) => this.isVoter(m) && this.isHealthy(m));
    if (next?.id === this.leaderId) return;
    if (next) this.term++;
    this.setLeader(next, why);
  }

  private setLeader(m: Member | undefined, why: string): void {
    this.leaderId = m?.id;
    this.leaders.push({ at: Date.now(), leader: m?.node.name, term: this.term, why });
  }

  /** After any change: alarms raised by faults, elections, the quorum record, waiting calls. */
  private changed(why: string): void {
    for (const m of this.members) {
      const alarm = this.faults(m).alarm;
      if (alarm !== m.raisedAlarm) {
        m.raisedAlarm = alarm;
        if (alarm) m.alarms.add(alarm);
      }
    }
    this.elect(why);
    this.check();
    for (const w of [...this.waiters]) w();
  }

  /** Called when faults change (a node's etcd faults or the cluster's quorum fault). */
  faultsChanged(): void {
    // An isolated member's index freezes where it was; once reconnected it catches up from there.
    const now = Date.now();
    for (const m of this.members) {
      if (m.state !== 'healthy') continue;
      const isolated = this.faults(m).unhealthy === true;
      if (isolated && !m.isolated) m.frozenIndex = this.connectedIndex(m, now);
      if (!isolated && m.isolated) {
        m.catchUpFrom = m.frozenIndex;
        m.healthySince = now;
      }
      m.isolated = isolated;
    }
    this.changed('faults changed');
  }

  setQuorumLost(on: boolean): void {
    if (this.quorumLostFault === on) return;
    this.quorumLostFault = on;
    this.changed(on ? 'quorum lost (fault)' : 'quorum back (fault cleared)');
  }

  private check(now = Date.now()): void {
    const open = this.losses.at(-1);
    const { up, voters } = this.votersUp();
    const lost = this.quorumLostFault || this.noQuorum();
    if (lost && (!open || open.to !== undefined)) {
      this.losses.push({
        from: now,
        to: undefined,
        healthy: this.quorumLostFault ? 0 : up.length,
        voters: voters.length,
        unhealthy: voters.filter((m) => !up.includes(m)).map((m) => m.node.name),
        cause: this.quorumLostFault ? 'fault' : 'members',
      });
    } else if (!lost && open && open.to === undefined) {
      open.to = now;
    }
  }

  // -- what the RPCs see ------------------------------------------------------------------------

  /** Whether the node's local member answers local calls now (else they hang). */
  answers(node: SimNode): boolean {
    const m = this.member(node);
    return m !== undefined && m.state === 'healthy';
  }

  /** True once `ok()` holds (checked on every change); false when `cancelled` resolves first or the lab stops. */
  waitUntil(ok: () => boolean, cancelled: Promise<void>): Promise<boolean> {
    if (ok()) return Promise.resolve(true);
    if (this.stopped) return Promise.resolve(false);
    return new Promise<boolean>((resolve) => {
      const w = (): void => {
        if (!this.stopped && !ok()) return;
        this.waiters.delete(w);
        resolve(!this.stopped);
      };
      this.waiters.add(w);
      void cancelled.then(() => {
        this.waiters.delete(w);
        resolve(false);
      });
    });
  }

  /**
   * The etcd pre-check of a legacy Upgrade on a control-plane node (v1alpha1_server.go `Upgrade`
   * without force, or with preserve before v1.12.9 / v1.13.4 / v1.14.0-alpha.2, runs
   * internal/pkg/etcd/etcd.go `ValidateForUpgrade`): every member in list order must be started and
   * answer a linearizable read within QuorumCheckTimeout (`ValidateQuorum`); the etcd client waits
   * for a member that is down or starting, a learner refuses the read at once. Resolves undefined when
   * the check passes (or `node` went down meanwhile: the caller sees the node unreachable), else the
   * error as the caller receives it: the deadline reaches it as DEADLINE_EXCEEDED (grpc-go maps a
   * wrapped context error to its code), the rest as UNKNOWN. Not simulated: the member-count rules
   * (they differ between versions) and the upgrade mutex, held only while these checks run.
   */
  async upgradeCheck(node: SimNode, cancelled: Promise<void>): Promise<RpcError | undefined> {
    for (const m of this.members) {
      const member = `error validating etcd for upgrade: etcd member ${BigInt(m.id).toString(16).padStart(16, '0')}`;
      if (this.faults(m).notStarted)
        return new RpcError(
          GrpcStatus.UNKNOWN,
          `${member} is not started, all members must be running to perform an upgrade`,
        );
      const unhealthy = `${member} is not healthy; all members must be healthy to perform an upgrade`;
      if (this.faults(m).learner)
        return new RpcError(GrpcStatus.UNKNOWN, `${unhealthy}: etcdserver: rpc not supported for learner`);
      let timer: NodeJS.Timeout | undefined;
      let onNodeChange: (() => void) | undefined;
      const giveUp = new Promise<void>((resolve) => {
        timer = setTimeout(resolve, this.timings().etcdQuorumCheckMs);
        onNodeChange = () => {
          if (node.phase === 'down') resolve();
        };
        node.events.on('change', onNodeChange);
        void cancelled.then(() => resolve());
      });
      try {
        await this.waitUntil(() => this.isHealthy(m), giveUp);
      } finally {
        clearTimeout(timer);
        if (onNodeChange) node.events.off('change', onNodeChange);
      }
      if (node.phase === 'down') return undefined;
      if (!this.isHealthy(m))
        return new RpcError(GrpcStatus.DEADLINE_EXCEEDED, `${unhealthy}: context deadline exceeded`);
    }
    return undefined;
  }

  hasQuorum(): boolean {
    return !this.quorumLostFault && !this.noQuorum();
  }

  isMember(node: SimNode): boolean {
    return this.member(node) !== undefined;
  }

  /** The members as a node lists them (the `staleMemberList` fault drops the last one). */
  memberList(node: SimNode): EtcdMemberView[] {
    const all = this.view();
    const m = this.member(node);
    return m && this.faults(m).staleMemberList ? all.slice(0, -1) : all;
  }

  view(now = Date.now()): EtcdMemberView[] {
    return this.members.map((m) => {
      const raftIndex = this.raftIndexOf(m, now);
      const ip = m.node.ip;
      return {
        id: m.id,
        name: this.faults(m).notStarted ? '' : m.node.name,
        node: m.node.name,
        peerUrls: [`https://${ip}:2380`],
        clientUrls: [`https://${ip}:2379`],
        isLearner: this.faults(m).learner === true,
        state: m.state,
        healthy: this.isHealthy(m),
        raftIndex,
        raftAppliedIndex: raftIndex,
        alarms: [...m.alarms],
      };
    });
  }

  /** EtcdStatus of the node's local member (undefined when it is not a member). */
  status(
    node: SimNode,
    now = Date.now(),
  ):
    | {
        memberId: string;
        leader: string;
        raftIndex: number;
        raftTerm: number;
        raftAppliedIndex: number;
        dbSize: number;
        dbSizeInUse: number;
        isLearner: boolean;
        errors: string[];
        protocolVersion: string;
        storageVersion: string;
      }
    | undefined {
    const m = this.member(node);
    if (!m) return undefined;
    const raftIndex = this.raftIndexOf(m, now);
    const noLeader = this.faults(m).unhealthy === true || !this.hasQuorum();
    const dbSize = 20 * 1024 * 1024 + Math.floor(raftIndex / 64) * 4096;
    const errors = [...m.alarms].map((a) => `memberID:${m.id} alarm:${a}`);
    return {
      memberId: m.id,
      leader: noLeader ? '0' : (this.leaderId ?? '0'),
      raftIndex,
      raftTerm: this.term,
      raftAppliedIndex: raftIndex,
      dbSize,
      dbSizeInUse: Math.floor(dbSize * 0.6),
      isLearner: this.faults(m).learner === true,
      errors,
      protocolVersion: etcdVersionFor(node.version),
      storageVersion: '3.6.0',
    };
  }

  alarms(): { memberId: string; alarm: EtcdAlarmType }[] {
    return this.members.flatMap((m) => [...m.alarms].map((alarm) => ({ memberId: m.id, alarm })));
  }

  disarm(): { memberId: string; alarm: EtcdAlarmType }[] {
    const out = this.alarms();
    for (const m of this.members) m.alarms.clear();
    this.changed('alarms disarmed');
    return out;
  }

  /** Faults cleared: the alarms they raised go too (of one node's member, or of all). */
  clearAlarms(node: SimNode | undefined): void {
    for (const m of this.members) {
      if (node !== undefined && m.node !== node) continue;
      m.alarms.clear();
      m.raisedAlarm = undefined;
    }
  }

  /**
   * ForfeitLeadership as upstream (internal/pkg/etcd/etcd.go): one member fails; a non-leader
   * succeeds with ''; the leader moves leadership to the first other member in list order.
   * Returns the new leader's name, or throws the upstream error text.
   */
  forfeit(node: SimNode): string {
    const m = this.member(node);
    if (!m) throw new Error('not a member');
    if (this.members.length === 1)
      throw new Error('failed to forfeit leadership: cannot forfeit leadership, only one member');
    if (!this.hasQuorum()) throw new Error('failed to forfeit leadership: etcdserver: no leader');
    if (this.leaderId !== m.id) return '';
    const target = this.members.find((x) => x !== m);
    if (!target) return '';
    if (this.faults(target).learner) throw new Error('failed to forfeit leadership: etcdserver: bad leader transferee');
    if (!this.isHealthy(target))
      throw new Error('failed to forfeit leadership: etcdserver: request timed out, leader transfer took too long');
    this.term++;
    this.setLeader(target, `${node.name} forfeited leadership`);
    this.changed('leadership moved');
    return this.faults(target).notStarted ? '' : target.node.name;
  }

  /** Test setup: make this node's member the leader now (a transfer, term + 1). */
  setLeaderNode(node: SimNode): void {
    const m = this.member(node);
    if (!m || !this.isHealthy(m)) throw new Error(`${node.name}: no healthy member to lead`);
    if (this.leaderId === m.id) return;
    this.term++;
    this.setLeader(m, 'set by the test');
    this.changed('leader set');
  }

  leader(): string | undefined {
    return this.members.find((m) => m.id === this.leaderId)?.node.name;
  }

  record(): EtcdRecord {
    return {
      quorumLosses: this.losses.map((l) => ({ ...l, unhealthy: [...l.unhealthy] })),
      leaders: this.leaders.map((l) => ({ ...l })),
    };
  }

  stop(): void {
    this.stopped = true;
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    for (const w of [...this.waiters]) w();
    this.waiters.clear();
  }
}
