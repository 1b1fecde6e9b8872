// Reporting rollouts back to Git as pull requests.
export { startReporter, type Reporter } from './reporter.js';
