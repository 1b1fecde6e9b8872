// The rollout report, pure: plan + jobs → a document (YAML twin) and its Markdown rendering,
// plus the decision of when a report commit is due.
export { reportDocument, type ReportDocument } from './document.js';
export { renderMarkdown } from './markdown.js';
export { commitHeldBackMs, reportDue, rolloutId, isReportable, isTerminal, REPORT_MIN_INTERVAL_MS } from './decide.js';
export type { ReportJob, ReportPlan, ReportSettings } from './types.js';

/** PatchPlan annotation: the URL of the pull request that carries the plan's current report (the status view shows it). */
export const REPORT_URL_ANNOTATION = 'kangalpatch.ozalp.dk/report-url';
