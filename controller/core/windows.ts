// Maintenance windows (spec.maintenance): is patching allowed now, until when, and when next.
//
// Semantics (also in the configuration reference, docs/configuration.md):
// - Times and dates are wall-clock values in `maintenance.timezone` (an IANA name; UTC when omitted).
// - A window applies to the days it STARTS on (`days`: full or 3-letter names in any case, or Any;
//   omitted = every day; an empty list = no day). endTime earlier than startTime runs past midnight
//   into the next day; endTime equal to startTime is a full 24 h window (the schema rejects that
//   spelling in plan files, so only hand-built values reach it; the rule is the same "end is not after
//   start ⇒ next day" rule).
// - excludeDates cut whole local days out of every window: a window spanning midnight into an excluded
//   date stops at that midnight, and the part after midnight of a window that started on an excluded
//   date still opens at the following midnight (nothing at all is open on an excluded date).
// - Overlapping or touching windows form one open period: closesAt is when the period really ends.
// - No enabled window: open at any time except on excluded dates (without excluded dates: always open).
// - DST: a wall-clock time maps to the FIRST instant at which the local clock shows that time or later.
//   So a start (or end) inside a spring-forward gap (02:30 on a day the clock jumps 02:00 → 03:00) is
//   the instant of the jump (03:00 local), and a time that happens twice on a fall-back day is its first
//   occurrence. Start and end are resolved independently, so the window keeps its wall-clock bounds
//   (01:00–05:00 lasts 3 real hours on a spring-forward night and 5 on a fall-back night); a window
//   wholly inside a gap does not open that day.
//
// Pure: time is the `nowMs` argument; the zone rules come from the Intl data luxon reads.
import { IANAZone } from 'luxon';
import type { z } from 'zod';
import type { maintenance, maintenanceWindow } from '../../schemas/patchplan.js';

export type Maintenance = z.output<typeof maintenance>;
type MaintenanceWindow = z.output<typeof maintenanceWindow>;

export interface WindowState {
  open: boolean;
  /** When open: the instant the current open period ends (undefined: not within the search horizon). */
  closesAt?: number;
  /** When closed: the instant the next window opens (undefined: none within the search horizon). */
  nextOpenAt?: number;
  /** One sentence for status and events. */
  reason: string;
}

/** How far ahead (in local days) nextOpenAt and closesAt are searched. */
export const WINDOW_SEARCH_DAYS = 400;

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
const WEEKDAYS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'] as const;
const ALL_DAYS: ReadonlySet<number> = new Set([0, 1, 2, 3, 4, 5, 6]);

/** A local calendar day, counted in days since 1970-01-01 (of the wall clock, not of UTC instants). */
type LocalDay = number;

interface CompiledWindow {
  days: ReadonlySet<number>;
  /** Minutes after local midnight. */
  start: number;
  end: number;
}

interface Plan {
  zone: IANAZone;
  zoneName: string;
  windows: CompiledWindow[];
  excluded: ReadonlySet<LocalDay>;
  /** No enabled window: every day is open except the excluded ones. */
  onlyExcludedDates: boolean;
}

interface Period {
  start: number;
  end: number;
  /** The period reaches the end of the search horizon, so its real end is unknown. */
  openEnded?: boolean;
}

export function windowState(m: Maintenance | undefined, nowMs: number): WindowState {
  const enabled = (m?.windows ?? []).filter((w) => !w.disabled);
  const excludeDates = m?.excludeDates ?? [];
  if (enabled.length === 0 && excludeDates.length === 0) {
    return { open: true, reason: 'no maintenance windows: nodes may be scheduled at any time' };
  }
  const zoneName = m?.timezone ?? 'UTC';
  const zone = IANAZone.create(zoneName); // cached by luxon, and so is its validity
  if (!zone.isValid) {
    return {
      open: false,
      reason: `unknown time zone "${zoneName}" in maintenance.timezone: nothing is scheduled until it is fixed`,
    };
  }
  const plan: Plan = {
    zone,
    zoneName,
    windows: enabled.map(compileWindow),
    excluded: new Set(excludeDates.map(parseDate)),
    onlyExcludedDates: enabled.length === 0,
  };
  return stateAt(plan, nowMs);
}

/** Open inside the first period not over yet at `nowMs`, else closed until the next one starts. */
function stateAt(plan: Plan, nowMs: number): WindowState {
  const today = localDay(plan.zone, nowMs);
  const periods = plan.onlyExcludedDates ? wholeDayPeriods : openPeriods;
  for (const p of periods(plan, today - 2, today + WINDOW_SEARCH_DAYS)) {
    if (p.end <= nowMs) continue;
    if (p.start <= nowMs) return openState(plan, p);
    return closedState(plan, today, p.start);
  }
  return closedState(plan, today, undefined);
}

function openState(plan: Plan, p: Period): WindowState {
  if (p.openEnded) {
    const what = plan.onlyExcludedDates
      ? `no enabled maintenance windows and no excluded date within the next ${WINDOW_SEARCH_DAYS} days`
      : `inside a maintenance window that does not close within the next ${WINDOW_SEARCH_DAYS} days`;
    return { open: true, reason: what };
  }
  const what = plan.onlyExcludedDates
    ? 'no enabled maintenance windows, only excluded dates'
    : 'inside a maintenance window';
  return { open: true, closesAt: p.end, reason: `${what}; closes ${describeInstant(plan, p.end)}` };
}

function closedState(plan: Plan, today: LocalDay, nextOpenAt: number | undefined): WindowState {
  const why = plan.excluded.has(today)
    ? `${formatDate(today)} is an excluded date (${plan.zoneName})`
    : 'outside maintenance windows';
  const next =
    nextOpenAt === undefined
      ? `no window opens within the next ${WINDOW_SEARCH_DAYS} days`
      : `next window opens ${describeInstant(plan, nextOpenAt)}`;
  return nextOpenAt === undefined
    ? { open: false, reason: `${why}; ${next}` }
    : { open: false, nextOpenAt, reason: `${why}; ${next}` };
}

/** Merged open periods, in order, for windows starting on local days `from`..`to`. */
function* openPeriods(plan: Plan, from: LocalDay, to: LocalDay): Generator<Period> {
  let pending: Period[] = [];
  for (let d = from; d <= to; d++) {
    pending = merge([...pending, ...dayIntervals(plan, d)]);
    // Windows of later days start at or after the next local midnight: what ends before it is final.
    const boundary = midnight(plan, d + 1);
    while (pending[0] && pending[0].end < boundary) yield pending.shift() as Period;
  }
  for (const p of pending) yield { ...p, openEnded: true };
}

/** Without enabled windows: the runs of local days between excluded dates, each one open period. */
function* wholeDayPeriods(plan: Plan, from: LocalDay, to: LocalDay): Generator<Period> {
  const cuts = [...plan.excluded].filter((d) => d >= from && d <= to).sort((a, b) => a - b);
  let runStart = from;
  for (const d of cuts) {
    if (d > runStart) yield { start: midnight(plan, runStart), end: midnight(plan, d) };
    runStart = d + 1;
  }
  if (runStart <= to) yield { start: midnight(plan, runStart), end: midnight(plan, to + 1), openEnded: true };
}

/** The intervals of the windows that start on local day d, with excluded days cut out. */
function dayIntervals(plan: Plan, d: LocalDay): Period[] {
  const weekday = (((d + 4) % 7) + 7) % 7; // 1970-01-01 was a Thursday
  const out: Period[] = [];
  for (const w of plan.windows) {
    if (!w.days.has(weekday)) continue;
    const endDay = w.end <= w.start ? d + 1 : d;
    let start = resolve(plan, d * DAY + w.start * MINUTE);
    let end = resolve(plan, endDay * DAY + w.end * MINUTE);
    if (plan.excluded.has(d)) start = Math.max(start, midnight(plan, d + 1));
    if (endDay !== d && plan.excluded.has(endDay)) end = Math.min(end, midnight(plan, endDay));
    if (end > start) out.push({ start, end });
  }
  return out;
}

/** Sorts and joins overlapping or touching periods. */
function merge(periods: Period[]): Period[] {
  const sorted = [...periods].sort((a, b) => a.start - b.start);
  const out: Period[] = [];
  for (const p of sorted) {
    const last = out.at(-1);
    if (last && p.start <= last.end) last.end = Math.max(last.end, p.end);
    else out.push({ ...p });
  }
  return out;
}

// ---- wall clock ↔ instants ----

const offsetMs = (zone: IANAZone, at: number): number => zone.offset(at) * MINUTE;
const wallClock = (zone: IANAZone, at: number): number => at + offsetMs(zone, at);
const localDay = (zone: IANAZone, at: number): LocalDay => Math.floor(wallClock(zone, at) / DAY);
const midnight = (plan: Plan, d: LocalDay): number => resolve(plan, d * DAY);

// Zone offsets at UTC midnights, memoized: an Intl lookup costs ~10 µs and every call needs a few
// per day it looks at. A memo of a pure function (the zone data does not change in a running
// process), bounded, so it changes no result.
const DAY_OFFSETS = new Map<string, number>();
const DAY_OFFSETS_MAX = 20_000;

function offsetAtUtcDay(plan: Plan, utcDay: number): number {
  const key = `${plan.zoneName}@${utcDay}`;
  let o = DAY_OFFSETS.get(key);
  if (o === undefined) {
    o = offsetMs(plan.zone, utcDay * DAY);
    if (DAY_OFFSETS.size >= DAY_OFFSETS_MAX) DAY_OFFSETS.clear();
    DAY_OFFSETS.set(key, o);
  }
  return o;
}

/**
 * The first instant at which the zone's wall clock shows `wall` (ms of a naive local date-time) or
 * later: the earlier of two occurrences on a fall-back day, the moment of the jump for a time that a
 * spring-forward skips. Assumes at most one offset change within ±2 days, as every real zone has.
 */
function resolve(plan: Plan, wall: number): number {
  // Every instant showing `wall` lies within [wall - 14 h, wall + 14 h] (offsets span -12 h … +14 h).
  const before = offsetAtUtcDay(plan, Math.floor((wall - 14 * HOUR) / DAY));
  const after = offsetAtUtcDay(plan, Math.ceil((wall + 14 * HOUR) / DAY));
  if (before === after) return wall - before;
  const zone = plan.zone;
  const candidates = [wall - before, wall - after];
  const exact = candidates.filter((u) => wallClock(zone, u) === wall);
  if (exact.length > 0) return Math.min(...exact);
  // In a gap: the wall clock jumps over `wall` between the two candidates; find the jump.
  let lo = Math.min(...candidates);
  let hi = Math.max(...candidates);
  while (hi - lo > 1) {
    const mid = Math.floor((lo + hi) / 2);
    if (wallClock(zone, mid) >= wall) hi = mid;
    else lo = mid;
  }
  return hi;
}

// ---- parsing and formatting ----

function compileWindow(w: MaintenanceWindow): CompiledWindow {
  return {
    days: w.days === undefined ? ALL_DAYS : daySet(w.days),
    start: parseTime(w.startTime),
    end: parseTime(w.endTime),
  };
}

function daySet(names: readonly string[]): ReadonlySet<number> {
  const days = new Set<number>();
  for (const name of names) {
    const key = name.slice(0, 3).toLowerCase();
    if (key === 'any') return ALL_DAYS;
    const i = WEEKDAYS.findIndex((d) => d.toLowerCase() === key);
    if (i >= 0) days.add(i);
  }
  return days;
}

function parseTime(hhmm: string): number {
  const [h, m] = hhmm.split(':').map(Number);
  return (h ?? 0) * 60 + (m ?? 0);
}

function parseDate(yyyymmdd: string): LocalDay {
  const [y, m, d] = yyyymmdd.split('-').map(Number);
  return Date.UTC(y ?? 1970, (m ?? 1) - 1, d ?? 1) / DAY;
}

const pad = (n: number): string => String(n).padStart(2, '0');

function formatDate(d: LocalDay): string {
  return new Date(d * DAY).toISOString().slice(0, 10);
}

/** "2026-12-05T22:00:00Z (Sat 23:00 Europe/Berlin)". */
function describeInstant(plan: { zone: IANAZone; zoneName: string }, at: number): string {
  const utc = new Date(at).toISOString().replace('.000Z', 'Z');
  const wall = wallClock(plan.zone, at);
  const day = Math.floor(wall / DAY);
  const minutes = Math.floor((wall - day * DAY) / MINUTE);
  const weekday = WEEKDAYS[(((day + 4) % 7) + 7) % 7] ?? '';
  return `${utc} (${weekday} ${pad(Math.floor(minutes / 60))}:${pad(minutes % 60)} ${plan.zoneName})`;
}
