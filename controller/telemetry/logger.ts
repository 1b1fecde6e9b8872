// Structured JSON logs (pino). Credentials never reach a log line: known secret-bearing fields are
// redacted, and the code never logs Secret data, tokens or client objects.
import { pino } from 'pino';
import type { LogFn } from '../runtime/log.js';

export type Logger = pino.Logger;

export const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

const REDACT = [
  '*.token',
  '*.password',
  '*.secret',
  '*.authorization',
  '*["tls.key"]',
  '*["ca.crt"]',
  '*["tls.crt"]',
  'headers.authorization',
];

export function createLogger(
  level: LogLevel,
  destination: pino.DestinationStream = pino.destination({ fd: 1, sync: true }),
): Logger {
  return pino(
    {
      level,
      base: { component: 'kangal-patch' },
      redact: { paths: REDACT, censor: '[redacted]' },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    destination,
  );
}

/** The adapters' and runtime's logging seam, backed by pino. */
export function logFn(logger: Logger): LogFn {
  return (level, message, fields) => logger[level](fields ?? {}, message);
}
