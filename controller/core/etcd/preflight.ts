// The etcd preflight of a plan that upgrades Talos on control-plane nodes: etcd is readable on every
// control-plane node (the credentials' role allows it), no alarm is raised and the cluster is not
// one Talos refuses (two members) — otherwise the plan fails preflight with what to do. A member
// that is merely unhealthy or behind does not fail it: the gate waits for it before the first
// control-plane node goes down, and the check says so. Pure: the facts were read by the adapter.
import type { PlanEtcdStatus } from '../../../schemas/etcd.js';
import { iso } from '../time.js';
import {
  alarmProblem,
  controlPlaneSafety,
  leaderNode,
  leaderOf,
  memberLabel,
  memberList,
  memberProblem,
  nodeOfMember,
  type EtcdFacts,
  type EtcdMemberFact,
  type Safety,
} from './index.js';

export interface EtcdPreflight {
  passed: boolean;
  message: string;
  /** What plan status records (status.etcd); undefined when etcd could not be read. */
  status: PlanEtcdStatus | undefined;
}

export interface EtcdPreflightInput {
  /** The selected control-plane nodes, in scheduling order. */
  selected: readonly string[];
  maxLagEntries: number;
  now: number;
}

const READ_HINT =
  'the Talos credentials need a role that reads etcd (os:reader or above) and every control-plane node must answer';

export function etcdPreflight(facts: EtcdFacts, input: EtcdPreflightInput): EtcdPreflight {
  const list = memberList(facts);
  const unreadable = unreadableProblem(facts, list);
  if (unreadable !== undefined || !list.ok) return fail(unreadable ?? READ_HINT);
  const members = list.value;
  const alarm = alarmProblem(facts, members, input.selected[0] ?? '');
  if (alarm) {
    return fail(
      `etcd member ${alarm.member} ${alarm.problem}: clear its cause (NOSPACE: compact and defragment etcd; CORRUPT: restore the member) and disarm it (talosctl etcd alarm disarm), then the preflight passes on its next try`,
    );
  }
  const leaderName = leaderNode(facts);
  const status: PlanEtcdStatus = {
    checkedTime: iso(input.now),
    ...(leaderName === undefined ? {} : { leader: leaderName }),
    members: memberStates(facts, members),
  };
  const safety = firstSafety(facts, input, leaderName);
  if (safety?.state === 'refused') return { passed: false, message: safety.message, status };
  const parts = [
    `etcd: ${members.length} member(s) ${members.map((m) => `${memberLabel(facts, m)}${leaderName !== undefined && nodeOfMember(facts, m) === leaderName ? ' (leader)' : ''}`).join(', ')}`,
  ];
  if (leaderName !== undefined && input.selected.includes(leaderName))
    parts.push(`the leader's node ${leaderName} goes last and hands leadership over first`);
  parts.push(outlook(safety, status));
  return { passed: true, message: parts.join('; '), status };
}

/** The gate's verdict for the first control-plane node to go down (none selected: undefined). */
function firstSafety(facts: EtcdFacts, input: EtcdPreflightInput, leaderName: string | undefined): Safety | undefined {
  // The first control-plane node to go down is the first in order that is not the leader.
  const first = input.selected.find((n) => n !== leaderName) ?? input.selected[0];
  return first === undefined
    ? undefined
    : controlPlaneSafety(facts, { node: first, maxLagEntries: input.maxLagEntries });
}

/** What the first control-plane node will meet: a wait (recorded as status.waitFor), the single-node warning, or nothing. */
function outlook(safety: Safety | undefined, status: PlanEtcdStatus): string {
  if (safety?.state === 'unsafe') {
    status.waitFor = `etcd member ${safety.member} ${safety.problem}`;
    return `the first control-plane node waits (at most spec.etcd.timeout) while ${status.waitFor}`;
  }
  if (safety?.state === 'safe' && safety.warning !== undefined) {
    status.warning = safety.warning;
    return safety.warning;
  }
  return 'every member healthy and caught up';
}

/** Each member's health (not its lag: a member behind is healthy, the gate waits for it) and lag, by name. */
function memberStates(facts: EtcdFacts, members: readonly EtcdMemberFact[]): PlanEtcdStatus['members'] {
  const leader = leaderOf(facts);
  return members
    .map((m) => {
      const node = nodeOfMember(facts, m);
      const own = facts.nodes.find((n) => n.node === node);
      const lag =
        leader?.raftIndex !== undefined && own?.status.ok
          ? Math.max(0, leader.raftIndex - own.status.value.raftIndex)
          : undefined;
      return {
        name: m.name,
        ...(node === undefined ? {} : { node }),
        healthy: memberProblem(facts, m, leader, Number.POSITIVE_INFINITY) === undefined,
        ...(lag === undefined ? {} : { lagEntries: lag }),
      };
    })
    .sort((a, b) => a.name.localeCompare(b.name));
}

/** etcd unreadable: no member list anywhere, or a control-plane node whose status read failed. */
function unreadableProblem(facts: EtcdFacts, list: ReturnType<typeof memberList>): string | undefined {
  if (!list.ok) return `etcd members cannot be read (${list.error}): ${READ_HINT}`;
  const unreadable = facts.nodes.flatMap((n) => (n.status.ok ? [] : [`${n.node}: ${n.status.error}`]));
  if (unreadable.length > 0)
    return `etcd status cannot be read on ${unreadable.length} control-plane node(s): ${unreadable.slice(0, 3).join('; ')}; ${READ_HINT}`;
  return undefined;
}

function fail(message: string): EtcdPreflight {
  return { passed: false, message, status: undefined };
}
