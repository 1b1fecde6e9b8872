export {
  jobEvents,
  planEvents,
  proposalEvent,
  type JobRef,
  type NotifyEvent,
  type PlanRef,
  type ProposalRef,
} from './events.js';
export { receiverBody, receiverWants } from './format.js';
export { jobWaiting, planWaiting, type WaitingDecision } from './waiting.js';
