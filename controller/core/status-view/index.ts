// The status view of `kangal-patch status`: plan, job and node views and the time in, a stable
// document (json, yaml) or lines that fit a terminal (text, wide) out. Pure: no I/O, no clock.
export type { StatusInput, StatusJobInput, StatusNodeInput, StatusPlanInput } from './input.js';
export * from './document.js';
export { missingPlans, shownPlans, statusDocument, watchOutcome, type WatchOutcome } from './build.js';
export { OUTPUT_FORMATS, renderStatus, sameStatus, type OutputFormat } from './output.js';
export { renderText, planBlock } from './text.js';
export { changedFacts, facts, type Fact } from './facts.js';
export { fitHeight, fitLine, fitWidth } from './fit.js';
export { summaryTable } from './summary-table.js';
export { duration, viewerZone } from './time-text.js';
export type { TextOptions } from './sentences.js';
