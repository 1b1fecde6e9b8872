// Public surface of the API schemas: import types and validators from here.
export * from './api.js';
export * from './patchplan.js';
export * from './patchjob.js';
export { AutoUpdateAllow, ImageSource, planTarget, jobTarget } from './target.js';
export { ConditionStatus, SelectorOperator, type Condition } from './primitives.js';
export { planDocumentSchema } from './document.js';
export * from './health.js';
export * from './hooks.js';
