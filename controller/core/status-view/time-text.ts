// Times and durations as a person reads them on a terminal: elapsed times short ("4m10s"), and an
// instant in the viewer's own zone with UTC beside it, since plans speak UTC (status times) and
// maintenance windows speak their own zone. Pure: `nowMs` and the zone are arguments.
import { DateTime, IANAZone } from 'luxon';

/** "42s", "4m10s", "2h05m", "3d04h"; "-" for an unknown or negative span. */
export function duration(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0) return '-';
  const s = Math.floor(ms / 1000);
  const two = (n: number): string => String(n).padStart(2, '0');
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${two(s % 60)}s`;
  if (s < 86_400) return `${Math.floor(s / 3600)}h${two(Math.floor((s % 3600) / 60))}m`;
  return `${Math.floor(s / 86_400)}d${two(Math.floor((s % 86_400) / 3600))}h`;
}

/** "in 4m10s", "2m ago", "now": where an instant lies from `nowMs`. */
function relative(ms: number, nowMs: number): string {
  const d = ms - nowMs;
  if (Math.abs(d) < 1000) return 'now';
  return d > 0 ? `in ${duration(d)}` : `${duration(-d)} ago`;
}

/** The viewer's zone when it is a valid IANA name, else UTC (a status view must not fail on $TZ). */
export function viewerZone(zone: string | undefined): string {
  return zone !== undefined && IANAZone.isValidZone(zone) ? zone : 'UTC';
}

/**
 * `10:05:00 CET (09:05:00 UTC, in 4m10s)`: the instant in the viewer's zone, in UTC, and from now.
 * The date is added when the instant is not on the viewer's today; UTC is said once for a UTC viewer.
 */
export function instant(ms: number, nowMs: number, zone: string): string {
  const z = viewerZone(zone);
  const local = DateTime.fromMillis(ms, { zone: z, locale: 'en-US' });
  const utc = DateTime.fromMillis(ms, { zone: 'UTC', locale: 'en-US' });
  const sameDay = local.hasSame(DateTime.fromMillis(nowMs, { zone: z }), 'day');
  const format = sameDay ? 'HH:mm:ss' : 'yyyy-MM-dd HH:mm:ss';
  const when = relative(ms, nowMs);
  if (local.offset === 0 && (z === 'UTC' || z === 'Etc/UTC')) return `${utc.toFormat(format)} UTC (${when})`;
  const utcFormat = utc.hasSame(local, 'day') ? 'HH:mm:ss' : 'yyyy-MM-dd HH:mm:ss';
  return `${local.toFormat(format)} ${local.offsetNameShort ?? local.toFormat('ZZ')} (${utc.toFormat(utcFormat)} UTC, ${when})`;
}

/** epoch ms of an RFC 3339 time, undefined when absent or unreadable. */
export function ms(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const t = Date.parse(text);
  return Number.isFinite(t) ? t : undefined;
}
