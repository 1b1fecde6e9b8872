// The status view of `kangal-patch status`: plan, job and node views and the time in, a stable
// document (json, yaml) or lines that fit a terminal (text, wide) out. Pure: no I/O, no clock.
export type { StatusInput, StatusJobInput, StatusNodeInput, StatusPlanInput } from './input.js';
export * from './document.js';
export { missingPlans, statusDocument, watchOutcome } from './build.js';
export { renderStatus, sameStatus, type OutputFormat } from './output.js';
export { renderText } from './text.js';
export { changedFacts, facts, type Fact } from './facts.js';
export { fitHeight, fitLine } from './fit.js';
export { summaryTable } from './summary-table.js';
export { viewerZone } from './time-text.js';
