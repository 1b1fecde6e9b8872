export { jobEvents, planEvents, type JobRef, type NotifyEvent, type PlanRef } from './events.js';
export { facts, headline, receiverBody, receiverWants, webhookBody } from './format.js';
