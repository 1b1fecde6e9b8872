// Field-level building blocks shared by the PatchPlan and PatchJob schemas. Every pattern here is
// also emitted into the CRDs, so each must be valid for both JavaScript and Go's RE2.
import { IANAZone } from 'luxon';
import { z } from 'zod';
import { GO_DURATION_PATTERN, parseGoDuration } from './duration.js';
import { suggest } from './suggest.js';
import { withRules } from './cross-field.js';
import { SELECTOR_REQUIREMENT_RULES } from './rules.js';

const stringTypeError = (example: string) => (iss: { code: string; input: unknown }) => {
  if (iss.code !== 'invalid_type' || iss.input === undefined) return undefined;
  if (typeof iss.input === 'number') {
    // The classic YAML trap: `talosVersion: 1.10` is the float 1.1, not a version.
    return `must be a quoted string such as "${example}", not the number ${iss.input}: put the value in quotes in YAML`;
  }
  return undefined;
};

const VERSION_PATTERN = /^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)$/;

/** A release version such as "v1.12.1" (Talos or Kubernetes). */
export function version(example: string) {
  return z
    .string({ error: stringTypeError(example) })
    .regex(VERSION_PATTERN, { error: `must be a version such as "${example}" (v, then major.minor.patch)` })
    .meta({ example });
}

// The longest value of each kind of plan duration; beyond it a value can only be a mistake (and used
// to make the controller spin: runtime/timer.ts).
/** Timeouts: health checks, the alert gate, hooks, drain, reboot, Kubernetes upgrade. */
export const MAX_TIMEOUT = '24h';
/** delayBetweenNodes: a week. */
export const MAX_DELAY_BETWEEN_NODES = '168h';
/** retention.history: a year. */
export const MAX_RETENTION = '8760h';
/** Promotion soak and minReleaseAge: 90 days. */
export const MAX_RELEASE_AGE = '2160h';
/** autoUpdate.checkInterval: a week. */
export const MAX_CHECK_INTERVAL = '168h';

/** The range a duration field allows, as Go durations: `max` where a larger value can only be a mistake. */
export interface DurationBounds {
  min?: string;
  max?: string;
}

const DAY_MS = 24 * 3_600_000;

/** "168h (7 days)": Go durations have no day unit, so long limits say the days too. */
function spellLimit(text: string): string {
  const ms = parseGoDuration(text) ?? 0;
  return ms >= 2 * DAY_MS && ms % DAY_MS === 0 ? `${text} (${ms / DAY_MS} days)` : text;
}

/** `bounds` in milliseconds; a bound that is no Go duration is a mistake in the schema, so it throws. */
function boundsMs(bounds: DurationBounds): { minMs: number | undefined; maxMs: number | undefined } {
  const minMs = bounds.min === undefined ? undefined : parseGoDuration(bounds.min);
  const maxMs = bounds.max === undefined ? undefined : parseGoDuration(bounds.max);
  if ((bounds.min !== undefined && minMs === undefined) || (bounds.max !== undefined && maxMs === undefined)) {
    throw new Error(`duration bounds must be Go durations: ${JSON.stringify(bounds)}`);
  }
  return { minMs, maxMs };
}

/**
 * Go duration string ("300s", "5m", "1h30m"), see schemas/duration.ts, within `bounds` (checked here
 * and, as CEL rules, by the apiserver). Every delay the controller waits on is bounded: a plan is
 * untrusted input.
 */
export function duration(example: string, bounds: DurationBounds = {}) {
  const { minMs, maxMs } = boundsMs(bounds);
  const rules: { rule: string; message: string }[] = [];
  let schema = z
    .string({ error: stringTypeError(example) })
    .max(32, { error: 'must be at most 32 characters' })
    .regex(new RegExp(GO_DURATION_PATTERN), {
      error: 'must be a Go duration such as "300s", "5m" or "1h30m" (units ns, us, ms, s, m, h)',
    });
  if (bounds.min !== undefined && minMs !== undefined) {
    const message = `must be at least ${spellLimit(bounds.min)}`;
    schema = schema.refine((v) => (parseGoDuration(v) ?? minMs) >= minMs, { error: message });
    rules.push({ rule: `duration(self) >= duration('${bounds.min}')`, message });
  }
  if (bounds.max !== undefined && maxMs !== undefined) {
    const message = `must be at most ${spellLimit(bounds.max)}`;
    schema = schema.refine((v) => (parseGoDuration(v) ?? 0) <= maxMs, { error: message });
    rules.push({ rule: `duration(self) <= duration('${bounds.max}')`, message });
  }
  return schema.meta(rules.length > 0 ? { example, 'x-kubernetes-validations': rules } : { example });
}

/** A duration that must be at least `minText` (the CRD enforces the same with CEL). */
export function durationAtLeast(example: string, minText: string, maxText?: string) {
  return duration(example, maxText === undefined ? { min: minText } : { min: minText, max: maxText });
}

/** A duration that must be at most `maxText` (the CRD enforces the same with CEL). */
export function durationAtMost(example: string, maxText: string, why: string) {
  const maxMs = parseGoDuration(maxText) ?? 0;
  const message = `must be at most ${maxText} (${why})`;
  return duration(example)
    .refine((v) => (parseGoDuration(v) ?? 0) <= maxMs, { error: message })
    .meta({ 'x-kubernetes-validations': [{ rule: `duration(self) <= duration('${maxText}')`, message }] });
}

const TIME_OF_DAY_PATTERN = /^([01][0-9]|2[0-3]):[0-5][0-9]$/;
export const timeOfDay = z
  .string()
  .regex(TIME_OF_DAY_PATTERN, {
    error: 'must be a time "HH:MM" between 00:00 and 23:59 (in maintenance.timezone, UTC by default)',
  })
  // Implied by the pattern; stated for the apiserver's CEL cost estimate (window rules compare times).
  .meta({ maxLength: 5 });

// An IANA zone name. Must start with a letter: fixed offsets such as "+01:00" are not zone names (and
// whether Intl accepts them depends on the Node version), "Etc/GMT-1" is the IANA spelling of one.
const TIME_ZONE_PATTERN = /^[A-Za-z][-A-Za-z0-9_+]*([/][-A-Za-z0-9_+]+)*$/;
const timeZoneNames = (): string[] => ['UTC', ...Intl.supportedValuesOf('timeZone')];

/** IANA time zone name such as "Europe/Berlin" (validated against the zone data of the running Node). */
export const timeZone = z
  .string()
  .max(64, { error: 'must be at most 64 characters' })
  .regex(TIME_ZONE_PATTERN, { error: 'must be an IANA time zone name such as "Europe/Berlin" or "UTC", not an offset' })
  .refine((s) => !TIME_ZONE_PATTERN.test(s) || IANAZone.isValidZone(s), {
    error: (iss) => {
      const input = typeof iss.input === 'string' ? iss.input : '';
      const hint = suggest(input, timeZoneNames());
      return `unknown time zone "${input}": use an IANA name such as "Europe/Berlin" or "UTC"${hint ? ` (did you mean "${hint}"?)` : ''}`;
    },
  })
  .meta({ example: 'Europe/Berlin' });

const DAY_NAMES = ['Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday', 'Sunday'] as const;
const ANY_DAY = 'Any';
const DAY_WORDS = [...DAY_NAMES, ...DAY_NAMES.map((d) => d.slice(0, 3)), ANY_DAY];
// Case-insensitive without flags, so the same pattern works in the CRD (RE2 has no /i suffix).
const anyCase = (w: string) => [...w].map((c) => `[${c.toLowerCase()}${c.toUpperCase()}]`).join('');
const DAY_PATTERN = new RegExp(`^(${DAY_WORDS.map(anyCase).join('|')})$`);

export const dayName = z.string().regex(DAY_PATTERN, {
  error: (iss) => {
    const input = typeof iss.input === 'string' ? iss.input : '';
    const hint = suggest(input, DAY_WORDS);
    return `unknown day "${input}": use a day name (Monday or Mon, any case) or Any${hint ? ` (did you mean "${hint}"?)` : ''}`;
  },
});

const DATE_PATTERN = /^[0-9]{4}-[0-9]{2}-[0-9]{2}$/;

/** True when YYYY-MM-DD names a day that exists in the Gregorian calendar. */
function isRealDate(text: string): boolean {
  const [y, m, d] = text.split('-').map(Number);
  if (y === undefined || m === undefined || d === undefined) return false;
  if (m < 1 || m > 12 || d < 1) return false;
  const leap = (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0;
  const days = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][m - 1] ?? 0;
  return d <= days;
}

export const calendarDate = z
  .string()
  .regex(DATE_PATTERN, { error: 'must be a date "YYYY-MM-DD"' })
  .refine((s) => !DATE_PATTERN.test(s) || isRealDate(s), {
    error: (iss) => `"${String(iss.input)}" is not a real date`,
  })
  .meta({ format: 'date' });

const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const NAME_RULE = 'lowercase letters, digits, "-" and ".", starting and ending with a letter or digit';

/** metadata.name of a PatchPlan: a DNS-1123 subdomain short enough to be a label value. */
export const objectName = z
  .string()
  .min(1, { error: 'must not be empty' })
  .max(63, { error: 'must be at most 63 characters (the plan name is used as a label value)' })
  .regex(DNS_SUBDOMAIN, { error: `must be a valid Kubernetes name: ${NAME_RULE}` });

export const secretName = z
  .string()
  .min(1, { error: 'must not be empty' })
  .max(253, { error: 'must be at most 253 characters' })
  .regex(DNS_SUBDOMAIN, { error: `must be a valid Kubernetes name: ${NAME_RULE}` });

export const namespaceName = z
  .string()
  .max(63, { error: 'must be at most 63 characters' })
  .regex(DNS_LABEL, { error: 'must be a valid namespace name: lowercase letters, digits and "-"' });

const LABEL_KEY =
  /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

export const labelKey = z
  .string()
  .max(317, { error: 'must be at most 317 characters' })
  .regex(LABEL_KEY, { error: 'must be a valid label key such as "node-role.kubernetes.io/control-plane"' });
export const labelValue = z
  .string()
  .max(63, { error: 'must be at most 63 characters' })
  .regex(LABEL_VALUE, { error: 'must be a valid label value: letters, digits, "-", "_" and "."' });

export const SelectorOperator = { In: 'In', NotIn: 'NotIn', Exists: 'Exists', DoesNotExist: 'DoesNotExist' } as const;
export type SelectorOperator = (typeof SelectorOperator)[keyof typeof SelectorOperator];

const selectorRequirement = withRules(
  z.strictObject({
    key: labelKey,
    operator: z.enum(SelectorOperator),
    values: z.array(labelValue).optional(),
  }),
  SELECTOR_REQUIREMENT_RULES,
);

/** metav1.LabelSelector. */
export const labelSelector = z
  .strictObject({
    matchLabels: z
      .record(labelKey, labelValue)
      .optional()
      .meta({ description: 'Labels a node must carry, all of them.' }),
    matchExpressions: z
      .array(selectorRequirement)
      .optional()
      .meta({ description: 'Label requirements a node must satisfy, all of them.' }),
  })
  .meta({ description: 'A Kubernetes label selector (matchLabels and/or matchExpressions).' });

const ENDPOINT_PATTERN = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9]([-A-Za-z0-9.]*[A-Za-z0-9])?)(:[0-9]{1,5})?$/;
export const endpoint = z
  .string()
  .regex(ENDPOINT_PATTERN, { error: 'must be "host" or "host:port", such as "10.0.0.10:50000"' });

/** RFC 3339 timestamp as the apiserver writes it. */
export const timestamp = z.iso.datetime({ offset: true });

const ConditionStatus = { True: 'True', False: 'False', Unknown: 'Unknown' } as const;
type ConditionStatus = (typeof ConditionStatus)[keyof typeof ConditionStatus];

/** metav1.Condition. */
const condition = z.strictObject({
  type: z
    .string()
    .max(316)
    .regex(
      /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$/,
    ),
  status: z.enum(ConditionStatus),
  observedGeneration: z.int().min(0).optional(),
  lastTransitionTime: timestamp,
  reason: z
    .string()
    .min(1)
    .max(1024)
    .regex(/^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$/),
  message: z.string().max(32768),
});
export type Condition = z.infer<typeof condition>;

export const conditions = z
  .array(condition)
  .meta({ 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['type'] });
