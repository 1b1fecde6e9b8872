// What each receiver type is sent: the generic webhook gets the event itself as JSON; Slack, Microsoft
// Teams and Discord get a message in the format their incoming webhooks document (Slack: `text` plus
// Block Kit `blocks`; Teams Workflows: a `message` with one Adaptive Card attachment; Discord: an
// embed, with mentions disabled). Pure: the notifier serializes and sends.
import { API_VERSION } from '../../../schemas/api.js';
import { NotifyEventType, type NotifyReceiver, type ReceiverType } from '../../../schemas/notify.js';
import { escapeMarkdown, markdownCell } from '../markdown.js';
import type { NotifyEvent } from './events.js';

/** Whether a receiver takes this event: its event types and plans (each default: all). */
export function receiverWants(r: Pick<NotifyReceiver, 'events' | 'plans'>, e: NotifyEvent): boolean {
  return (r.events === undefined || r.events.includes(e.type)) && (r.plans === undefined || r.plans.includes(e.plan));
}

/** The generic webhook body: stable field names, the idempotency key as `id`. */
function webhookBody(e: NotifyEvent, cluster: string | undefined): Record<string, unknown> {
  const { key, ...rest } = e;
  return {
    apiVersion: API_VERSION,
    kind: 'Notification',
    id: key,
    ...(cluster === undefined ? {} : { cluster }),
    ...rest,
  };
}

type Tone = 'good' | 'bad' | 'neutral';

const TONE: Record<NotifyEventType, Tone> = {
  [NotifyEventType.PlanStarted]: 'neutral',
  [NotifyEventType.PlanCompleted]: 'good',
  [NotifyEventType.PlanFailed]: 'bad',
  [NotifyEventType.PlanPaused]: 'bad',
  [NotifyEventType.NodeStarted]: 'neutral',
  [NotifyEventType.NodeCompleted]: 'good',
  [NotifyEventType.NodeFailed]: 'bad',
  [NotifyEventType.ProposalOpened]: 'neutral',
  [NotifyEventType.PlanWaiting]: 'bad',
  [NotifyEventType.NodeWaiting]: 'bad',
};

const because = (e: NotifyEvent): string => (e.reason ? ` (${e.reason})` : '');

const HEADLINE: Record<NotifyEventType, (e: NotifyEvent) => string> = {
  [NotifyEventType.PlanStarted]: (e) => `plan ${e.plan} started (${e.progress?.total ?? 0} node(s))`,
  [NotifyEventType.PlanCompleted]: (e) =>
    `plan ${e.plan} completed (${e.progress?.completed ?? 0} completed, ${e.progress?.failed ?? 0} failed)`,
  [NotifyEventType.PlanFailed]: (e) => `plan ${e.plan} failed${because(e)}`,
  [NotifyEventType.PlanPaused]: (e) => `plan ${e.plan} paused${because(e)}`,
  [NotifyEventType.NodeStarted]: (e) => `node ${e.node ?? '?'} started (plan ${e.plan})`,
  [NotifyEventType.NodeCompleted]: (e) => `node ${e.node ?? '?'} upgraded (plan ${e.plan})`,
  [NotifyEventType.NodeFailed]: (e) => `node ${e.node ?? '?'} failed${because(e)} (plan ${e.plan})`,
  [NotifyEventType.ProposalOpened]: (e) => `Talos ${e.targetTalosVersion ?? '?'} proposed for ${e.plan}`,
  [NotifyEventType.PlanWaiting]: (e) => `plan ${e.plan} is still waiting${because(e)}`,
  [NotifyEventType.NodeWaiting]: (e) => `node ${e.node ?? '?'} is still draining${because(e)} (plan ${e.plan})`,
};

/** One line a human reads first. */
function headline(e: NotifyEvent, cluster: string | undefined): string {
  return `KangalPatch${cluster === undefined ? '' : ` [${cluster}]`}: ${HEADLINE[e.type](e)}`;
}

/** The facts shown under the headline, in order. */
function facts(e: NotifyEvent, cluster: string | undefined): { name: string; value: string }[] {
  const out: { name: string; value: string }[] = [];
  const add = (name: string, value: string | undefined): void => {
    if (value !== undefined && value !== '') out.push({ name, value });
  };
  add('Cluster', cluster);
  add('Plan', e.plan);
  add('Node', e.node);
  add('Group', e.group);
  add('Phase', e.phase);
  add('Reason', e.reason);
  add('Talos', e.targetTalosVersion);
  add('Kubernetes', e.targetKubernetesVersion);
  if (e.progress)
    add(
      'Nodes',
      `${e.progress.completed}/${e.progress.total} completed, ${e.progress.failed} failed, ${e.progress.running} running`,
    );
  add('Pull request', e.url);
  add('Waiting since', e.since);
  add('Time', e.time);
  return out;
}

const cut = (text: string, max: number): string => (text.length <= max ? text : `${text.slice(0, max - 1)}…`);

/** Slack treats &, < and > as markup (`<!channel>` pings everyone). */
const slackEscape = (text: string): string => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

function slackBody(e: NotifyEvent, cluster: string | undefined): Record<string, unknown> {
  const title = slackEscape(headline(e, cluster));
  const blocks: Record<string, unknown>[] = [
    { type: 'section', text: { type: 'mrkdwn', text: cut(`*${title}*`, 3000) } },
    {
      type: 'section',
      fields: facts(e, cluster)
        .slice(0, 10)
        .map((f) => ({ type: 'mrkdwn', text: cut(`*${f.name}*\n${slackEscape(f.value)}`, 2000) })),
    },
  ];
  if (e.message)
    blocks.push({ type: 'context', elements: [{ type: 'mrkdwn', text: cut(slackEscape(e.message), 3000) }] });
  return { text: title, blocks };
}

const TEAMS_COLOR: Record<Tone, string> = { good: 'Good', bad: 'Attention', neutral: 'Default' };

// Teams and Discord render Markdown in these texts: plan names, node names, reasons and messages go
// in escaped (core/markdown.ts), so a plan cannot put a link or an image into a card.
function teamsBody(e: NotifyEvent, cluster: string | undefined): Record<string, unknown> {
  const body: Record<string, unknown>[] = [
    {
      type: 'TextBlock',
      text: markdownCell(headline(e, cluster)),
      weight: 'Bolder',
      size: 'Medium',
      wrap: true,
      color: TEAMS_COLOR[TONE[e.type]],
    },
    { type: 'FactSet', facts: facts(e, cluster).map((f) => ({ title: f.name, value: markdownCell(f.value) })) },
  ];
  if (e.message) body.push({ type: 'TextBlock', text: escapeMarkdown(e.message), wrap: true, isSubtle: true });
  return {
    type: 'message',
    attachments: [
      {
        contentType: 'application/vnd.microsoft.card.adaptive',
        contentUrl: null,
        content: {
          $schema: 'http://adaptivecards.io/schemas/adaptive-card.json',
          type: 'AdaptiveCard',
          version: '1.4',
          body,
        },
      },
    ],
  };
}

const DISCORD_COLOR: Record<Tone, number> = { good: 0x2eb67d, bad: 0xe01e5a, neutral: 0x3b82f6 };

function discordBody(e: NotifyEvent, cluster: string | undefined): Record<string, unknown> {
  const embed = {
    title: cut(markdownCell(headline(e, cluster)), 256),
    ...(e.message ? { description: cut(escapeMarkdown(e.message), 4096) } : {}),
    color: DISCORD_COLOR[TONE[e.type]],
    fields: facts(e, cluster)
      .slice(0, 25)
      .map((f) => ({ name: cut(f.name, 256), value: cut(markdownCell(f.value), 1024), inline: true })),
    timestamp: e.time,
  };
  // No @everyone or role pings from a plan's message.
  return { username: 'KangalPatch', embeds: [embed], allowed_mentions: { parse: [] } };
}

/** The JSON body for a receiver of this type. */
export function receiverBody(type: ReceiverType, e: NotifyEvent, cluster: string | undefined): Record<string, unknown> {
  switch (type) {
    case 'webhook':
      return webhookBody(e, cluster);
    case 'slack':
      return slackBody(e, cluster);
    case 'teams':
      return teamsBody(e, cluster);
    case 'discord':
      return discordBody(e, cluster);
  }
}
