// etcd-safe control-plane rollouts: may this control-plane node go down now, who leads (so the
// leader goes last), is a rebooted member caught up. Pure: the talos adapter read the member list,
// each control-plane node's EtcdStatus and the alarms; this decides from them and `now`.
//
// The gate is stricter than Talos' own ValidateForUpgrade (internal/pkg/etcd/etcd.go), which only
// the legacy Upgrade runs and which ignores alarms, lag and the leader: every member started and
// not a learner, the member lists agree and match the control-plane nodes, no alarms, every member
// healthy (a leader seen, no errors) and within a raft-index lag bound of the leader, and a quorum
// of voting members left with this node's member down. Exactly two members are refused as Talos
// refuses them; a single member is allowed with a warning (etcd is down while it reboots).
import { DEFAULT_ETCD_MAX_LAG_ENTRIES as DEFAULT_MAX_LAG_ENTRIES } from '../../../schemas/etcd.js';
import { iso } from '../time.js';

export interface EtcdMemberFact {
  /** uint64 as a decimal string. */
  id: string;
  /** The etcd member name (the node's hostname); '' while the member has not started. */
  name: string;
  peerUrls: readonly string[];
  isLearner: boolean;
}

export interface EtcdStatusFact {
  memberId: string;
  /** '0': no leader known. */
  leader: string;
  raftIndex: number;
  raftAppliedIndex: number;
  isLearner: boolean;
  errors: readonly string[];
}

/** What one control-plane node answered (each read may fail: a down member's calls hit their deadline). */
export interface EtcdNodeFacts {
  node: string;
  /** The node's InternalIP, to match members by peer URL when names differ from node names. */
  ip: string;
  status: { ok: true; value: EtcdStatusFact } | { ok: false; error: string };
  /** This node's member list (query_local false); undefined when not read. */
  members?: { ok: true; value: readonly EtcdMemberFact[] } | { ok: false; error: string } | undefined;
}

export interface EtcdFacts {
  /** One entry per control-plane node of the cluster. */
  nodes: readonly EtcdNodeFacts[];
  alarms: { ok: true; value: readonly { memberId: string; alarm: string }[] } | { ok: false; error: string };
}

export type Safety =
  | { state: 'safe'; leader: string | undefined; warning?: string }
  /** Not now: wait (the member and what is wrong). */
  | { state: 'unsafe'; member: string; problem: string }
  /** Never, whatever the wait: two members lose quorum with either down. */
  | { state: 'refused'; message: string };

/** `%016x`, as talosctl and Talos' own errors print member IDs. */
export function memberHex(id: string): string {
  try {
    return BigInt(id).toString(16).padStart(16, '0');
  } catch {
    return id;
  }
}

const hostOf = (url: string): string => {
  const m = /^[a-z]+:\/\/(\[[^\]]+\]|[^:/]+)/i.exec(url);
  return (m?.[1] ?? '').replace(/^\[|\]$/g, '');
};

/** The control-plane node a member runs on: by name, else by the host of its peer URL. */
export function nodeOfMember(facts: EtcdFacts, member: EtcdMemberFact): string | undefined {
  const byName = facts.nodes.find((n) => n.node === member.name);
  if (byName) return byName.node;
  const hosts = member.peerUrls.map(hostOf);
  return facts.nodes.find((n) => hosts.includes(n.ip))?.node;
}

/** The member list every answering node gave (the first that answered), or the errors. */
export function memberList(
  facts: EtcdFacts,
): { ok: true; value: readonly EtcdMemberFact[] } | { ok: false; error: string } {
  const answered = facts.nodes.map((n) => n.members).find((m) => m?.ok === true);
  if (answered) return answered;
  const errors = facts.nodes.flatMap((n) => (n.members && !n.members.ok ? [`${n.node}: ${n.members.error}`] : []));
  return { ok: false, error: errors.length > 0 ? errors.join('; ') : 'no control-plane node answered' };
}

/** A member as messages name it: its name, with its node when that differs. */
export const memberLabel = (facts: EtcdFacts, m: EtcdMemberFact): string => {
  const node = nodeOfMember(facts, m);
  const name = m.name === '' ? `(unstarted) ${memberHex(m.id)}` : m.name;
  return node !== undefined && node !== m.name ? `${name} (node ${node})` : name;
};

const sameSet = (a: readonly EtcdMemberFact[], b: readonly EtcdMemberFact[]): boolean =>
  a.length === b.length &&
  a.every((m) => b.some((x) => x.id === m.id && x.name === m.name && x.isLearner === m.isLearner));

/** The leader's member ID more than half of the answering statuses name, and its raft index; undefined when none. */
export function leaderOf(facts: EtcdFacts): { id: string; raftIndex: number | undefined } | undefined {
  const seen = facts.nodes.flatMap((n) =>
    n.status.ok && n.status.value.leader !== '0' ? [n.status.value.leader] : [],
  );
  const counts = new Map<string, number>();
  for (const id of seen) counts.set(id, (counts.get(id) ?? 0) + 1);
  const top = [...counts].find(([, c]) => c * 2 > seen.length);
  if (!top) return undefined;
  const id = top[0];
  const own = facts.nodes.find((n) => n.status.ok && n.status.value.memberId === id);
  return { id, raftIndex: own?.status.ok ? own.status.value.raftIndex : undefined };
}

/** The control-plane node whose member leads now (undefined: none known or not ours). */
export function leaderNode(facts: EtcdFacts): string | undefined {
  const leader = leaderOf(facts);
  if (!leader) return undefined;
  const byStatus = facts.nodes.find((n) => n.status.ok && n.status.value.memberId === leader.id);
  if (byStatus) return byStatus.node;
  const list = memberList(facts);
  const m = list.ok ? list.value.find((x) => x.id === leader.id) : undefined;
  return m ? nodeOfMember(facts, m) : undefined;
}

/** Control-plane node names ordered so that the current leader goes last (others keep their order). */
export function leaderLast(nodes: readonly string[], leader: string | undefined): string[] {
  if (leader === undefined || !nodes.includes(leader)) return [...nodes];
  return [...nodes.filter((n) => n !== leader), leader];
}

/** Why one member is not healthy and caught up, or undefined when it is. */
export function memberProblem(
  facts: EtcdFacts,
  m: EtcdMemberFact,
  leader: { id: string; raftIndex: number | undefined } | undefined,
  maxLag: number,
): string | undefined {
  const node = nodeOfMember(facts, m);
  const n = facts.nodes.find((x) => x.node === node);
  if (!n) return `runs on no control-plane node of the cluster (peer URLs ${m.peerUrls.join(', ') || 'none'})`;
  if (!n.status.ok) return `not healthy: etcd status on ${n.node} failed: ${n.status.error}`;
  const s = n.status.value;
  if (s.memberId !== m.id)
    return `not healthy: ${n.node} answers for member ${memberHex(s.memberId)}, not ${memberHex(m.id)}`;
  return statusProblem(s, leader, maxLag);
}

/** Why a member's own etcd status says it is not healthy or not caught up with `leader`, or undefined. */
function statusProblem(
  s: EtcdStatusFact,
  leader: { id: string; raftIndex: number | undefined } | undefined,
  maxLag: number,
): string | undefined {
  if (s.isLearner) return 'is a learner (not yet promoted to a voting member)';
  if (s.errors.length > 0) return `reports errors: ${s.errors.join('; ')}`;
  if (s.leader === '0') return 'not healthy: sees no leader';
  if (leader && s.leader !== leader.id) return `sees leader ${memberHex(s.leader)}, the others ${memberHex(leader.id)}`;
  if (leader?.raftIndex !== undefined) {
    const lag = leader.raftIndex - s.raftIndex;
    if (lag > maxLag) return `is ${lag} raft entries behind the leader (bound ${maxLag})`;
  }
  return undefined;
}

type Problem = { member: string; problem: string };

/** Every member started and voting, the lists agree across nodes, every control-plane node has a member. */
function membershipProblem(facts: EtcdFacts, members: readonly EtcdMemberFact[]): Problem | undefined {
  for (const m of members) {
    if (m.name === '') return { member: memberHex(m.id), problem: 'is not started, all members must be running' };
    if (m.isLearner)
      return { member: memberLabel(facts, m), problem: 'is a learner (not yet promoted to a voting member)' };
  }
  const names = (l: readonly EtcdMemberFact[]): string => l.map((m) => m.name || memberHex(m.id)).join(', ');
  for (const n of facts.nodes) {
    if (n.members?.ok === true && !sameSet(n.members.value, members)) {
      return {
        member: n.node,
        problem: `member lists disagree: ${n.node} lists [${names(n.members.value)}], another node [${names(members)}]`,
      };
    }
  }
  for (const n of facts.nodes) {
    if (!members.some((m) => nodeOfMember(facts, m) === n.node))
      return { member: n.node, problem: `control-plane node ${n.node} has no etcd member` };
  }
  return undefined;
}

export function alarmProblem(facts: EtcdFacts, members: readonly EtcdMemberFact[], node: string): Problem | undefined {
  if (!facts.alarms.ok) return { member: node, problem: `cannot list etcd alarms: ${facts.alarms.error}` };
  const alarm = facts.alarms.value[0];
  if (!alarm) return undefined;
  const m = members.find((x) => x.id === alarm.memberId);
  const more = facts.alarms.value.length > 1 ? ` (and ${facts.alarms.value.length - 1} more alarm(s))` : '';
  return { member: m ? memberLabel(facts, m) : memberHex(alarm.memberId), problem: `has alarm ${alarm.alarm}${more}` };
}

export interface SafetyOptions {
  /** The control-plane node about to go down. */
  node: string;
  maxLagEntries?: number;
}

/** May `opts.node` (a control-plane node) go down now without putting etcd's quorum at risk? */
export function controlPlaneSafety(facts: EtcdFacts, opts: SafetyOptions): Safety {
  const maxLag = opts.maxLagEntries ?? DEFAULT_MAX_LAG_ENTRIES;
  const list = memberList(facts);
  if (!list.ok) return { state: 'unsafe', member: opts.node, problem: `cannot list etcd members: ${list.error}` };
  const members = list.value;
  if (members.length === 2) {
    return {
      state: 'refused',
      message:
        'etcd member count(2) is insufficient to maintain quorum if upgrade commences (Talos refuses it too): add a third control-plane node first',
    };
  }
  const problem = membershipProblem(facts, members) ?? alarmProblem(facts, members, opts.node);
  if (problem) return { state: 'unsafe', ...problem };
  const leader = leaderOf(facts);
  for (const m of members) {
    const problem = memberProblem(facts, m, leader, maxLag);
    if (problem !== undefined) return { state: 'unsafe', member: memberLabel(facts, m), problem };
  }
  if (!leader) return { state: 'unsafe', member: opts.node, problem: 'the members do not agree on one leader' };
  // Every member is healthy here; the quorum left with this node's member down.
  const voters = members.length;
  const left = members.filter((m) => nodeOfMember(facts, m) !== opts.node).length;
  const quorum = Math.floor(voters / 2) + 1;
  const leaderName = leaderNode(facts);
  if (voters === 1) {
    return {
      state: 'safe',
      leader: leaderName,
      warning: `single control-plane node: etcd and the Kubernetes API are down while ${opts.node} reboots`,
    };
  }
  if (left < quorum)
    return {
      state: 'unsafe',
      member: opts.node,
      problem: `with ${opts.node} down ${left} of ${voters} members are left, fewer than the quorum of ${quorum}`,
    };
  return { state: 'safe', leader: leaderName };
}

/** Is the node's member back after its reboot: healthy (a leader seen, no errors, not a learner) and within the lag bound? */
export function caughtUp(
  facts: EtcdFacts,
  node: string,
  maxLagEntries = DEFAULT_MAX_LAG_ENTRIES,
): { ok: true } | { ok: false; problem: string } {
  const n = facts.nodes.find((x) => x.node === node);
  if (!n) return { ok: false, problem: `${node} is not a control-plane node of the cluster` };
  if (!n.status.ok) return { ok: false, problem: `etcd status on ${node} failed: ${n.status.error}` };
  const s = n.status.value;
  if (s.isLearner) return { ok: false, problem: `the member on ${node} is a learner` };
  if (s.errors.length > 0)
    return { ok: false, problem: `the member on ${node} reports errors: ${s.errors.join('; ')}` };
  if (s.leader === '0') return { ok: false, problem: `the member on ${node} sees no leader` };
  const leader = facts.nodes.find((x) => x.status.ok && x.status.value.memberId === s.leader);
  if (!leader?.status.ok) return { ok: false, problem: `the leader ${memberHex(s.leader)} did not answer` };
  const lag = leader.status.value.raftIndex - s.raftIndex;
  if (lag > maxLagEntries)
    return {
      ok: false,
      problem: `the member on ${node} is ${lag} raft entries behind the leader (bound ${maxLagEntries})`,
    };
  return { ok: true };
}

interface EtcdWait {
  /** ISO time the wait began. */
  startTime: string;
  /** ISO time it fails. */
  deadline: string;
}

export type WaitDecision =
  | { state: 'go' }
  | { state: 'wait'; reason: 'WaitingForEtcd'; message: string; wait: EtcdWait }
  | { state: 'fail'; reason: 'EtcdTimeout' | 'EtcdQuorumAtRisk'; message: string };

export interface EtcdWaitInput {
  verdict:
    { state: 'ok' } | { state: 'unsafe'; member: string; problem: string } | { state: 'refused'; message: string };
  /** The gate: before the node goes down, or after its reboot. */
  what: 'before' | 'after';
  /** The wait recorded in status, if this gate is already waiting. */
  wait?: EtcdWait | undefined;
  /** How long a new wait may last (spec.etcd.timeout). */
  timeoutMs: number;
  now: number;
}

/**
 * A gate verdict against the wait recorded in status: go, wait (the message names the member and
 * what is wrong, with the deadline), or fail once the deadline passed (or at once when refused).
 */
export function etcdWait({ verdict, what, wait, timeoutMs, now }: EtcdWaitInput): WaitDecision {
  if (verdict.state === 'ok') return { state: 'go' };
  if (verdict.state === 'refused') return { state: 'fail', reason: 'EtcdQuorumAtRisk', message: verdict.message };
  const start = wait ? Date.parse(wait.startTime) : now;
  const deadline = wait ? Date.parse(wait.deadline) : now + timeoutMs;
  const why = `etcd member ${verdict.member} ${verdict.problem}`;
  if (now >= deadline) {
    const phase = what === 'before' ? 'before the node could go down' : 'after the reboot';
    return {
      state: 'fail',
      reason: 'EtcdTimeout',
      message: `etcd was not ready ${phase} within the etcd timeout (deadline ${iso(deadline)}): ${why}`,
    };
  }
  const phase = what === 'before' ? 'before taking the node down' : 'for the member to catch up after the reboot';
  return {
    state: 'wait',
    reason: 'WaitingForEtcd',
    message: `waiting for etcd ${phase} (until ${iso(deadline)}): ${why}`,
    wait: { startTime: iso(start), deadline: iso(deadline) },
  };
}
