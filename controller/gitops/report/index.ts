// Reporting rollouts back to Git as pull requests.
export {
  startReporter,
  reportBranch,
  reportTitle,
  type Reporter,
  type ReporterConfig,
  type ReporterDeps,
  type ReportWriter,
} from './reporter.js';
export { renderReport, reportPaths, type ReportFiles } from './render.js';
