// Public surface of the API schemas: import types and validators from here.
export * from './api.js';
export * from './patchplan.js';
export * from './patchjob.js';
export * from './health.js';
export * from './hooks.js';
