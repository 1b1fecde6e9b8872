// etcd-safe control-plane rollouts: the plan's tuning of the etcd gate (spec.etcd) and what a
// control-plane node's job records about it (status.etcd). The gate itself is controller/core/etcd.
import { z } from 'zod';
import { duration, MAX_TIMEOUT, timestamp } from './primitives.js';

export const DEFAULT_ETCD_TIMEOUT = '15m';
/** Raft entries a member may be behind the leader and count as caught up (a few seconds of writes on a busy cluster). */
export const DEFAULT_ETCD_MAX_LAG_ENTRIES = 1000;

export const etcdSettings = z
  .strictObject({
    timeout: duration(DEFAULT_ETCD_TIMEOUT, { max: MAX_TIMEOUT }).default(DEFAULT_ETCD_TIMEOUT).meta({
      description:
        'How long a control-plane node waits for etcd (before it goes down, and for its member to catch up after the reboot) before the failure policy applies.',
    }),
    maxLagEntries: z.int().min(0).max(10_000_000).default(DEFAULT_ETCD_MAX_LAG_ENTRIES).meta({
      description: 'Raft entries a member may be behind the leader and still count as caught up.',
    }),
  })
  .meta({
    description:
      'The etcd gate of control-plane nodes: every member healthy, caught up and a quorum left before one goes down; its member caught up before the next.',
  });

export const EtcdWaitStage = { BeforeCordon: 'beforeCordon', AfterReboot: 'afterReboot' } as const;

export const jobEtcdStatus = z
  .strictObject({
    wait: z
      .strictObject({
        stage: z.enum(EtcdWaitStage),
        startTime: timestamp,
        deadline: timestamp.meta({ description: 'When the wait fails (spec.etcd.timeout after it began).' }),
      })
      .optional()
      .meta({
        description:
          'The etcd gate holds the node now: since when and until when (the message says which member and why).',
      }),
    leaseTime: timestamp.optional().meta({
      description: "When the job took the cluster's etcd disruption Lease (one control-plane node at a time).",
    }),
    leaseReleasedTime: timestamp.optional(),
    forfeitRequestedTime: timestamp
      .optional()
      .meta({ description: "Recorded before EtcdForfeitLeadership is called: the node's member led etcd." }),
    forfeitTime: timestamp.optional().meta({ description: 'When EtcdForfeitLeadership returned.' }),
    leaderBefore: z.string().optional().meta({ description: 'The node whose member led etcd when the gate opened.' }),
    gatePassedTime: timestamp.optional().meta({ description: 'When the gate let the node go down.' }),
    caughtUpTime: timestamp
      .optional()
      .meta({ description: "When the node's member was healthy and caught up after the reboot." }),
    waitedSeconds: z
      .int()
      .min(0)
      .optional()
      .meta({ description: 'Seconds the gate held the node, before and after the reboot.' }),
    warning: z.string().optional().meta({ description: 'A single control-plane node: etcd is down while it reboots.' }),
  })
  .meta({ description: 'The etcd gate of this control-plane node.' });

export type JobEtcdStatus = z.output<typeof jobEtcdStatus>;

export const planEtcdStatus = z
  .strictObject({
    checkedTime: timestamp.meta({ description: 'When the preflight read etcd from every control-plane node.' }),
    leader: z
      .string()
      .optional()
      .meta({ description: 'The control-plane node whose member led etcd then; it goes last in its group.' }),
    members: z
      .array(
        z.strictObject({
          name: z.string().meta({ description: "The member name (the node's hostname)." }),
          node: z.string().optional().meta({ description: 'The control-plane node it runs on.' }),
          healthy: z.boolean().meta({ description: 'Answered its status, sees the leader, no errors, not a learner.' }),
          lagEntries: z.int().min(0).optional().meta({ description: 'Raft entries behind the leader.' }),
        }),
      )
      .meta({ description: 'The etcd members, by name.' }),
    waitFor: z.string().optional().meta({
      description:
        'What the gate will wait for before the first control-plane node goes down (spec.etcd.timeout applies).',
    }),
    warning: z.string().optional().meta({ description: 'A single control-plane node: etcd is down while it reboots.' }),
  })
  .meta({ description: 'etcd as the preflight found it, for plans that upgrade Talos on control-plane nodes.' });

export type PlanEtcdStatus = z.output<typeof planEtcdStatus>;
