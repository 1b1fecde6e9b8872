// Maintenance windows (controller/core/windows.ts): table-driven with fixed instants, then a
// property-style sweep over many `now` values.
import assert from 'node:assert/strict';
import { maintenance as maintenanceSchema } from '../../../schemas/patchplan.js';
import { windowState, WINDOW_SEARCH_DAYS, type Maintenance } from '../../../controller/core/windows.js';

type WindowInput = { days?: string[]; startTime: string; endTime: string; disabled?: boolean };
type MaintenanceInput = { timezone?: string; excludeDates?: string[]; windows?: WindowInput[] };

/** Built through the schema, so the tests use exactly what the controller gets from a plan. */
const plan = (m: MaintenanceInput): Maintenance => maintenanceSchema.parse(m);
/** Bypasses validation (for values the schema rejects, e.g. startTime == endTime). */
const raw = (m: MaintenanceInput): Maintenance => ({
  ...m,
  windows: m.windows?.map((w) => ({ disabled: false, ...w })),
});
const win = (days: string[] | undefined, startTime: string, endTime: string, disabled = false): WindowInput =>
  days === undefined ? { startTime, endTime, disabled } : { days, startTime, endTime, disabled };

const ms = (iso: string) => {
  const t = Date.parse(iso);
  assert.ok(!Number.isNaN(t), iso);
  return t;
};
const iso = (t: number | undefined) => (t === undefined ? undefined : new Date(t).toISOString());

interface Case {
  name: string;
  m: Maintenance | undefined;
  now: string;
  open: boolean;
  closesAt?: string;
  nextOpenAt?: string;
  reason?: string | RegExp;
}

// Calendar used below: 2026-12-01 is a Tuesday, 2026-12-24 a Thursday.
// EU DST 2026: spring forward Sun 2026-03-29 01:00Z (02:00 CET → 03:00 CEST), fall back Sun 2026-10-25 01:00Z (03:00 CEST → 02:00 CET).
// US DST 2026: spring forward Sun 2026-03-08 07:00Z (02:00 EST → 03:00 EDT), fall back Sun 2026-11-01 06:00Z (02:00 EDT → 01:00 EST).
const tueMorning = plan({ windows: [win(['Tue'], '01:00', '05:00')] });
const satNight = plan({ windows: [win(['Sat'], '22:00', '02:00')] });
const berlinSat = plan({ timezone: 'Europe/Berlin', windows: [win(['Sat'], '23:00', '05:00')] });
const wedNightXmasEve = plan({ excludeDates: ['2026-12-24'], windows: [win(['Wed'], '22:00', '04:00')] });
const thuNightXmasEve = plan({ excludeDates: ['2026-12-24'], windows: [win(['Thu'], '22:00', '04:00')] });
const onlyExcluded = plan({ excludeDates: ['2026-12-24', '2026-12-25'] });
const berlin = (w: WindowInput) => plan({ timezone: 'Europe/Berlin', windows: [w] });
const newYork = (w: WindowInput) => plan({ timezone: 'America/New_York', windows: [w] });

const cases: Case[] = [
  // no restriction
  {
    name: 'no maintenance: always open',
    m: undefined,
    now: '2026-12-01T10:00:00Z',
    open: true,
    reason: 'no maintenance windows: nodes may be scheduled at any time',
  },
  { name: 'empty maintenance: always open', m: plan({}), now: '2026-12-01T10:00:00Z', open: true },
  {
    name: 'only disabled windows: always open',
    m: plan({ windows: [win(['Mon'], '01:00', '02:00', true)] }),
    now: '2026-12-01T10:00:00Z',
    open: true,
  },
  {
    name: 'a time zone alone restricts nothing',
    m: plan({ timezone: 'Europe/Berlin' }),
    now: '2026-12-01T10:00:00Z',
    open: true,
  },

  // a plain window: start inclusive, end exclusive
  {
    name: 'inside a window',
    m: tueMorning,
    now: '2026-12-01T03:00:00Z',
    open: true,
    closesAt: '2026-12-01T05:00:00.000Z',
    reason: 'inside a maintenance window; closes 2026-12-01T05:00:00Z (Tue 05:00 UTC)',
  },
  {
    name: 'at the start instant: open',
    m: tueMorning,
    now: '2026-12-01T01:00:00Z',
    open: true,
    closesAt: '2026-12-01T05:00:00.000Z',
  },
  {
    name: 'one ms before the start: closed, opens exactly then',
    m: tueMorning,
    now: '2026-12-01T00:59:59.999Z',
    open: false,
    nextOpenAt: '2026-12-01T01:00:00.000Z',
  },
  {
    name: 'at the end instant: closed until next week',
    m: tueMorning,
    now: '2026-12-01T05:00:00Z',
    open: false,
    nextOpenAt: '2026-12-08T01:00:00.000Z',
    reason: 'outside maintenance windows; next window opens 2026-12-08T01:00:00Z (Tue 01:00 UTC)',
  },
  {
    name: 'one ms before the end: open',
    m: tueMorning,
    now: '2026-12-01T04:59:59.999Z',
    open: true,
    closesAt: '2026-12-01T05:00:00.000Z',
  },

  // days
  {
    name: 'days omitted: every day',
    m: plan({ windows: [win(undefined, '01:00', '05:00')] }),
    now: '2026-12-02T06:00:00Z',
    open: false,
    nextOpenAt: '2026-12-03T01:00:00.000Z',
  },
  {
    name: 'Any: every day',
    m: plan({ windows: [win(['Any'], '01:00', '05:00')] }),
    now: '2026-12-02T06:00:00Z',
    open: false,
    nextOpenAt: '2026-12-03T01:00:00.000Z',
  },
  {
    name: 'any (lower case) among other days: every day',
    m: plan({ windows: [win(['mon', 'any'], '01:00', '05:00')] }),
    now: '2026-12-02T02:00:00Z',
    open: true,
    closesAt: '2026-12-02T05:00:00.000Z',
  },
  {
    name: 'mixed-case full and short names',
    m: plan({ windows: [win(['MONDAY', 'tue', 'sAt'], '01:00', '05:00')] }),
    now: '2026-12-01T06:00:00Z',
    open: false,
    nextOpenAt: '2026-12-05T01:00:00.000Z',
  },
  {
    name: 'full name Wednesday',
    m: plan({ windows: [win(['Wednesday'], '01:00', '05:00')] }),
    now: '2026-12-01T06:00:00Z',
    open: false,
    nextOpenAt: '2026-12-02T01:00:00.000Z',
  },
  {
    name: 'empty days list: never opens',
    m: plan({ windows: [win([], '01:00', '05:00')] }),
    now: '2026-12-01T03:00:00Z',
    open: false,
    reason: `outside maintenance windows; no window opens within the next ${WINDOW_SEARCH_DAYS} days`,
  },
  {
    name: 'a disabled window beside an enabled one is ignored',
    m: plan({ windows: [win(['Sat'], '01:00', '05:00'), win(undefined, '06:00', '07:00', true)] }),
    now: '2026-12-01T06:30:00Z',
    open: false,
    nextOpenAt: '2026-12-05T01:00:00.000Z',
  },

  // spanning midnight: the day list is the start day's
  {
    name: 'spanning midnight, after midnight of the start day',
    m: satNight,
    now: '2026-12-06T01:00:00Z',
    open: true,
    closesAt: '2026-12-06T02:00:00.000Z',
    reason: 'inside a maintenance window; closes 2026-12-06T02:00:00Z (Sun 02:00 UTC)',
  },
  {
    name: 'spanning midnight, before midnight',
    m: satNight,
    now: '2026-12-05T23:00:00Z',
    open: true,
    closesAt: '2026-12-06T02:00:00.000Z',
  },
  {
    name: 'spanning midnight: the day list is the start day',
    m: plan({ windows: [win(['Sun'], '22:00', '02:00')] }),
    now: '2026-12-06T01:00:00Z',
    open: false,
    nextOpenAt: '2026-12-06T22:00:00.000Z',
  },
  {
    name: 'overlapping windows: one open period',
    m: plan({ windows: [win(undefined, '01:00', '03:00'), win(undefined, '02:00', '05:00')] }),
    now: '2026-12-01T01:30:00Z',
    open: true,
    closesAt: '2026-12-01T05:00:00.000Z',
  },
  {
    name: 'touching windows across midnight: one open period',
    m: plan({ windows: [win(['Sat'], '22:00', '00:00'), win(['Sun'], '00:00', '02:00')] }),
    now: '2026-12-05T23:00:00Z',
    open: true,
    closesAt: '2026-12-06T02:00:00.000Z',
  },

  // startTime == endTime (the schema rejects it; core reads it as 24 h)
  {
    name: 'equal start and end: a 24 h window, last minute',
    m: raw({ windows: [win(['Sat'], '06:00', '06:00')] }),
    now: '2026-12-06T05:59:00Z',
    open: true,
    closesAt: '2026-12-06T06:00:00.000Z',
  },
  {
    name: 'equal start and end: opens at the start time',
    m: raw({ windows: [win(['Sat'], '06:00', '06:00')] }),
    now: '2026-12-05T05:00:00Z',
    open: false,
    nextOpenAt: '2026-12-05T06:00:00.000Z',
  },
  {
    name: 'equal start and end every day: continuous, never closes',
    m: raw({ windows: [win(undefined, '00:00', '00:00')] }),
    now: '2026-12-05T05:00:00Z',
    open: true,
    reason: `inside a maintenance window that does not close within the next ${WINDOW_SEARCH_DAYS} days`,
  },

  // excluded dates
  {
    name: 'spanning window stops at the midnight of an excluded date',
    m: wedNightXmasEve,
    now: '2026-12-23T23:00:00Z',
    open: true,
    closesAt: '2026-12-24T00:00:00.000Z',
  },
  {
    name: 'nothing open on the excluded date',
    m: wedNightXmasEve,
    now: '2026-12-24T01:00:00Z',
    open: false,
    nextOpenAt: '2026-12-30T22:00:00.000Z',
    reason: '2026-12-24 is an excluded date (UTC); next window opens 2026-12-30T22:00:00Z (Wed 22:00 UTC)',
  },
  {
    name: 'a window starting on an excluded date is closed that day',
    m: thuNightXmasEve,
    now: '2026-12-24T23:00:00Z',
    open: false,
    nextOpenAt: '2026-12-25T00:00:00.000Z',
  },
  {
    name: '… and its part after midnight opens on the next day',
    m: thuNightXmasEve,
    now: '2026-12-25T00:00:00Z',
    open: true,
    closesAt: '2026-12-25T04:00:00.000Z',
  },
  {
    name: 'daily window skipped on the excluded date',
    m: plan({ excludeDates: ['2026-12-24'], windows: [win(undefined, '01:00', '05:00')] }),
    now: '2026-12-24T02:00:00Z',
    open: false,
    nextOpenAt: '2026-12-25T01:00:00.000Z',
  },
  {
    name: 'no windows, only excluded dates: open until the first',
    m: onlyExcluded,
    now: '2026-12-20T10:00:00Z',
    open: true,
    closesAt: '2026-12-24T00:00:00.000Z',
    reason: 'no enabled maintenance windows, only excluded dates; closes 2026-12-24T00:00:00Z (Thu 00:00 UTC)',
  },
  {
    name: 'no windows, consecutive excluded dates: reopens after the last',
    m: onlyExcluded,
    now: '2026-12-24T10:00:00Z',
    open: false,
    nextOpenAt: '2026-12-26T00:00:00.000Z',
    reason: '2026-12-24 is an excluded date (UTC); next window opens 2026-12-26T00:00:00Z (Sat 00:00 UTC)',
  },
  {
    name: 'only disabled windows and excluded dates: closed on the date',
    m: plan({ excludeDates: ['2026-12-24'], windows: [win(['Mon'], '01:00', '02:00', true)] }),
    now: '2026-12-24T10:00:00Z',
    open: false,
    nextOpenAt: '2026-12-25T00:00:00.000Z',
  },
  {
    name: 'only past excluded dates: open without end',
    m: plan({ excludeDates: ['2025-12-24'] }),
    now: '2026-12-20T10:00:00Z',
    open: true,
    reason: 'no enabled maintenance windows and no excluded date within the next 400 days',
  },
  {
    name: 'every Monday excluded for longer than the horizon: no next window',
    m: plan({
      excludeDates: Array.from({ length: 60 }, (_, i) =>
        new Date(Date.UTC(2026, 11, 7 + 7 * i)).toISOString().slice(0, 10),
      ),
      windows: [win(['Mon'], '01:00', '05:00')],
    }),
    now: '2026-12-01T10:00:00Z',
    open: false,
    reason: `outside maintenance windows; no window opens within the next ${WINDOW_SEARCH_DAYS} days`,
  },

  // time zones
  {
    name: 'Europe/Berlin in winter (UTC+1)',
    m: berlinSat,
    now: '2026-12-01T10:00:00Z',
    open: false,
    nextOpenAt: '2026-12-05T22:00:00.000Z',
    reason: 'outside maintenance windows; next window opens 2026-12-05T22:00:00Z (Sat 23:00 Europe/Berlin)',
  },
  {
    name: 'Europe/Berlin: open, closes at 05:00 local',
    m: berlinSat,
    now: '2026-12-06T01:00:00Z',
    open: true,
    closesAt: '2026-12-06T04:00:00.000Z',
    reason: 'inside a maintenance window; closes 2026-12-06T04:00:00Z (Sun 05:00 Europe/Berlin)',
  },
  {
    name: 'excluded dates are local dates (Berlin is already on the 24th)',
    m: plan({ timezone: 'Europe/Berlin', excludeDates: ['2026-12-24'], windows: [win(undefined, '00:30', '01:30')] }),
    now: '2026-12-23T23:45:00Z',
    open: false,
    nextOpenAt: '2026-12-24T23:30:00.000Z',
    reason:
      '2026-12-24 is an excluded date (Europe/Berlin); next window opens 2026-12-24T23:30:00Z (Fri 00:30 Europe/Berlin)',
  },
  {
    name: 'day names are local days (Sat 00:30 Berlin is Fri 23:30 UTC)',
    m: plan({ timezone: 'Europe/Berlin', windows: [win(['Sat'], '00:30', '01:30')] }),
    now: '2026-12-04T23:45:00Z',
    open: true,
    closesAt: '2026-12-05T00:30:00.000Z',
  },
  {
    name: 'half-hour offset zone (Asia/Kolkata, UTC+5:30)',
    m: plan({ timezone: 'Asia/Kolkata', windows: [win(['Wed'], '01:00', '03:00')] }),
    now: '2026-12-01T10:00:00Z',
    open: false,
    nextOpenAt: '2026-12-01T19:30:00.000Z',
    reason: 'outside maintenance windows; next window opens 2026-12-01T19:30:00Z (Wed 01:00 Asia/Kolkata)',
  },
  {
    name: 'unknown zone (bypassing the schema): closed',
    m: raw({ timezone: 'Mars/Olympus', windows: [win(undefined, '01:00', '02:00')] }),
    now: '2026-12-01T01:30:00Z',
    open: false,
    reason: 'unknown time zone "Mars/Olympus" in maintenance.timezone: nothing is scheduled until it is fixed',
  },

  // DST, Europe/Berlin
  {
    name: 'Berlin spring forward: start in the gap opens at the jump (03:00 CEST)',
    m: berlin(win(['Sun'], '02:30', '04:00')),
    now: '2026-03-28T10:00:00Z',
    open: false,
    nextOpenAt: '2026-03-29T01:00:00.000Z',
    reason: 'outside maintenance windows; next window opens 2026-03-29T01:00:00Z (Sun 03:00 Europe/Berlin)',
  },
  {
    name: 'Berlin spring forward: closes at 04:00 CEST',
    m: berlin(win(['Sun'], '02:30', '04:00')),
    now: '2026-03-29T01:00:00Z',
    open: true,
    closesAt: '2026-03-29T02:00:00.000Z',
  },
  {
    name: 'Berlin spring forward: 01:00–05:00 lasts 3 real hours',
    m: berlin(win(['Sun'], '01:00', '05:00')),
    now: '2026-03-29T00:00:00Z',
    open: true,
    closesAt: '2026-03-29T03:00:00.000Z',
  },
  {
    name: 'Berlin spring forward: end in the gap closes at the jump',
    m: berlin(win(['Sun'], '01:00', '02:30')),
    now: '2026-03-29T00:30:00Z',
    open: true,
    closesAt: '2026-03-29T01:00:00.000Z',
  },
  {
    name: 'Berlin spring forward: a window wholly in the gap skips that day',
    m: berlin(win(['Sun'], '02:10', '02:50')),
    now: '2026-03-28T10:00:00Z',
    open: false,
    nextOpenAt: '2026-04-05T00:10:00.000Z',
  },
  {
    name: 'Berlin spring forward: overnight window Sat 22:00–06:00 lasts 7 h',
    m: berlin(win(['Sat'], '22:00', '06:00')),
    now: '2026-03-28T21:00:00Z',
    open: true,
    closesAt: '2026-03-29T04:00:00.000Z',
  },
  {
    name: 'Berlin fall back: 02:30 happens twice, opens at the first (CEST)',
    m: berlin(win(['Sun'], '02:30', '04:00')),
    now: '2026-10-24T10:00:00Z',
    open: false,
    nextOpenAt: '2026-10-25T00:30:00.000Z',
  },
  {
    name: 'Berlin fall back: still open in the repeated hour, closes 04:00 CET',
    m: berlin(win(['Sun'], '02:30', '04:00')),
    now: '2026-10-25T01:15:00Z',
    open: true,
    closesAt: '2026-10-25T03:00:00.000Z',
  },
  {
    name: 'Berlin fall back: 01:00–05:00 lasts 5 real hours',
    m: berlin(win(['Sun'], '01:00', '05:00')),
    now: '2026-10-24T23:00:00Z',
    open: true,
    closesAt: '2026-10-25T04:00:00.000Z',
  },

  // DST, America/New_York
  {
    name: 'New York spring forward: 02:30 opens at 03:00 EDT',
    m: newYork(win(['Sun'], '02:30', '04:00')),
    now: '2026-03-07T12:00:00Z',
    open: false,
    nextOpenAt: '2026-03-08T07:00:00.000Z',
    reason: 'outside maintenance windows; next window opens 2026-03-08T07:00:00Z (Sun 03:00 America/New_York)',
  },
  {
    name: 'New York spring forward: closes 04:00 EDT',
    m: newYork(win(['Sun'], '02:30', '04:00')),
    now: '2026-03-08T07:30:00Z',
    open: true,
    closesAt: '2026-03-08T08:00:00.000Z',
  },
  {
    name: 'New York fall back: 01:30 happens twice, opens at the first (EDT)',
    m: newYork(win(['Sun'], '01:30', '03:00')),
    now: '2026-10-31T12:00:00Z',
    open: false,
    nextOpenAt: '2026-11-01T05:30:00.000Z',
    reason: 'outside maintenance windows; next window opens 2026-11-01T05:30:00Z (Sun 01:30 America/New_York)',
  },
  {
    name: 'New York fall back: open at the second 01:45 (EST), closes 03:00 EST',
    m: newYork(win(['Sun'], '01:30', '03:00')),
    now: '2026-11-01T06:45:00Z',
    open: true,
    closesAt: '2026-11-01T08:00:00.000Z',
  },
  {
    name: 'New York fall back: overnight Sat 22:00–06:00 lasts 9 h',
    m: newYork(win(['Sat'], '22:00', '06:00')),
    now: '2026-11-01T02:00:00Z',
    open: true,
    closesAt: '2026-11-01T11:00:00.000Z',
  },
  {
    name: 'New York fall back: end 01:30 is its first occurrence',
    m: newYork(win(['Sun'], '00:30', '01:30')),
    now: '2026-11-01T05:00:00Z',
    open: true,
    closesAt: '2026-11-01T05:30:00.000Z',
  },
  {
    name: 'New York fall back: closed in the repeated 01:00–01:30 (EST)',
    m: newYork(win(['Sun'], '00:30', '01:30')),
    now: '2026-11-01T06:15:00Z',
    open: false,
    nextOpenAt: '2026-11-08T05:30:00.000Z',
  },
];

describe('core/windows: windowState', function () {
  for (const c of cases) {
    it(c.name, function () {
      const s = windowState(c.m, ms(c.now));
      assert.deepEqual(
        { open: s.open, closesAt: iso(s.closesAt), nextOpenAt: iso(s.nextOpenAt) },
        { open: c.open, closesAt: c.closesAt, nextOpenAt: c.nextOpenAt },
      );
      if (typeof c.reason === 'string') assert.equal(s.reason, c.reason);
      else if (c.reason) assert.match(s.reason, c.reason);
      else assert.ok(s.reason.length > 0);
      assert.ok(
        !('closesAt' in s && s.closesAt === undefined) && !('nextOpenAt' in s && s.nextOpenAt === undefined),
        'no keys with undefined',
      );
    });
  }
});

describe('core/windows: invariants over many instants', function () {
  const configs: [string, Maintenance][] = [
    [
      'UTC, two windows and excluded dates',
      plan({
        excludeDates: ['2026-12-24', '2027-01-01'],
        windows: [win(['Mon', 'fri'], '01:00', '05:00'), win(['Wed'], '22:00', '02:00')],
      }),
    ],
    [
      'Berlin overnight weekends',
      plan({
        timezone: 'Europe/Berlin',
        excludeDates: ['2026-10-25'],
        windows: [win(['Sat', 'Sun'], '23:00', '03:00')],
      }),
    ],
    [
      'Berlin, starts and ends in the DST hours',
      plan({
        timezone: 'Europe/Berlin',
        windows: [win(['Sun'], '02:30', '02:45'), win(['Sun'], '02:15', '04:00'), win(['Sat'], '01:00', '02:30')],
      }),
    ],
    [
      'New York, daily 01:30–03:00 and a long Saturday',
      plan({
        timezone: 'America/New_York',
        windows: [win(undefined, '01:30', '03:00'), win(['Sat'], '12:00', '11:00')],
      }),
    ],
    [
      'only excluded dates',
      plan({ timezone: 'America/New_York', excludeDates: ['2026-03-08', '2026-03-09', '2026-11-01'] }),
    ],
    [
      'Lord Howe (30 min DST shift), 02:00–02:40',
      plan({ timezone: 'Australia/Lord_Howe', windows: [win(undefined, '02:00', '02:40')] }),
    ],
  ];
  const start = ms('2026-01-01T00:00:00Z');
  const end = ms('2027-01-05T00:00:00Z');
  // An odd step so samples land at every time of day; plus dense samples around the 2026 DST changes.
  const step = 9 * 3_600_000 + 17 * 60_000 + 13_000 + 7;
  const dstDays = ['2026-03-08', '2026-03-29', '2026-04-05', '2026-10-04', '2026-10-25', '2026-11-01'];
  const instants: number[] = [];
  for (let t = start; t < end; t += step) instants.push(t);
  for (const day of dstDays)
    for (
      let t = ms(`${day}T00:00:00Z`) - 12 * 3_600_000;
      t < ms(`${day}T00:00:00Z`) + 36 * 3_600_000;
      t += 19 * 60_000 + 11
    )
      instants.push(t);

  for (const [name, m] of configs) {
    it(`${name}: closesAt/nextOpenAt are exact boundaries`, function () {
      this.timeout(60_000);
      let opened = 0;
      let closed = 0;
      for (const now of instants) {
        const s = windowState(m, now);
        const at = new Date(now).toISOString();
        if (s.open) {
          opened++;
          assert.equal(s.nextOpenAt, undefined, at);
          if (s.closesAt === undefined) continue;
          assert.ok(s.closesAt > now, `${at}: closesAt after now`);
          assert.equal(windowState(m, s.closesAt - 1).open, true, `${at}: open just before closesAt`);
          assert.equal(windowState(m, s.closesAt).open, false, `${at}: closed at closesAt`);
        } else {
          closed++;
          assert.equal(s.closesAt, undefined, at);
          assert.ok(s.nextOpenAt !== undefined, `${at}: a next window exists`);
          assert.ok(s.nextOpenAt > now, `${at}: nextOpenAt after now`);
          assert.equal(windowState(m, s.nextOpenAt).open, true, `${at}: open at nextOpenAt`);
          const before = windowState(m, s.nextOpenAt - 1);
          assert.equal(before.open, false, `${at}: closed just before nextOpenAt`);
          assert.equal(before.nextOpenAt, s.nextOpenAt, `${at}: same next window from just before`);
        }
      }
      assert.ok(opened > 0 && closed > 0, `both states sampled (open ${opened}, closed ${closed})`);
    });
  }
});
