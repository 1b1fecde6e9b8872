// The logging seam for adapters and the runtime: a plain function, so this layer does not pick a
// logging library (telemetry/ wires pino to it) and tests can collect lines.
export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

export type LogFn = (level: LogLevel, message: string, fields?: Record<string, unknown>) => void;

/** Drops everything; the default where a caller passes no logger. */
export const silentLog: LogFn = () => undefined;
