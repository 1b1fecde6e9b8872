// Time values as status stores them (RFC 3339) and as specs give them (Go durations). Pure.
import { parseGoDuration } from '../../schemas/duration.js';

export const iso = (ms: number): string => new Date(ms).toISOString();
export const epoch = (text: string | undefined): number | undefined =>
  text === undefined ? undefined : Date.parse(text);

/** Milliseconds of a Go duration from a validated spec (the schema guarantees the syntax). */
export function durationMs(text: string): number {
  return parseGoDuration(text) ?? 0;
}
