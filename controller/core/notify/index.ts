export {
  jobEvents,
  planEvents,
  proposalEvent,
  type JobRef,
  type NotifyEvent,
  type PlanRef,
  type ProposalRef,
} from './events.js';
export { facts, headline, receiverBody, receiverWants, webhookBody } from './format.js';
export { jobWaiting, planWaiting, type WaitingDecision } from './waiting.js';
