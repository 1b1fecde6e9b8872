// Turns zod issues into plan problems with precise paths and messages.
import type { z } from 'zod';
import { formatPath } from '../../../schemas/field-path.js';
import { suggest } from '../../../schemas/suggest.js';
import { UNKNOWN_FIELD_HINTS } from '../../../schemas/hints.js';
import { knownKeysAt } from '../../../schemas/introspect.js';

export interface PathProblem {
  path: PropertyKey[];
  message: string;
  /** Point at the key rather than the value (unknown fields, bad map keys). */
  atKey: boolean;
}

const EXPECTED: Readonly<Record<string, string>> = {
  string: 'a string',
  boolean: 'true or false',
  int: 'a whole number',
  number: 'a number',
  object: 'a mapping',
  record: 'a mapping',
  array: 'a list',
};

function describeValue(v: unknown): string {
  if (v === null) return 'an empty value';
  if (Array.isArray(v)) return 'a list';
  if (typeof v === 'string') return `the string ${JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}…` : v)}`;
  if (typeof v === 'number' || typeof v === 'boolean') return `${typeof v} ${String(v)}`;
  if (typeof v === 'object') return 'a mapping';
  return typeof v;
}

function typeMessage(iss: z.core.$ZodRawIssue<z.core.$ZodIssueInvalidType>): string {
  if (iss.input === undefined) return 'is required';
  const expected = EXPECTED[iss.expected] ?? iss.expected;
  const quote = iss.expected === 'string' && (typeof iss.input === 'number' || typeof iss.input === 'boolean');
  return `must be ${expected}, not ${describeValue(iss.input)}${quote ? ': put the value in quotes in YAML' : ''}`;
}

function valueMessage(iss: z.core.$ZodRawIssue<z.core.$ZodIssueInvalidValue>): string {
  const values = iss.values.map((v) => JSON.stringify(v));
  const hint = typeof iss.input === 'string' ? suggest(iss.input, iss.values.map(String)) : undefined;
  const list = values.length === 1 ? values[0] : `one of ${values.join(', ')}`;
  if (iss.input === undefined) return `is required: ${list}`;
  return `must be ${list}, not ${describeValue(iss.input)}${hint ? ` (did you mean "${hint}"?)` : ''}`;
}

const UNIT: Readonly<Record<string, string>> = { array: ' item(s)', string: ' character(s)' };

/** Default messages for issues whose schema did not set its own (passed as the per-parse error map). */
export const parseErrorMap: z.core.$ZodErrorMap = (iss) => {
  switch (iss.code) {
    case 'invalid_type':
      return typeMessage(iss);
    case 'invalid_value':
      return valueMessage(iss);
    case 'too_small':
      return `must be at least ${String(iss.minimum)}${UNIT[iss.origin] ?? ''}`;
    case 'too_big':
      return `must be at most ${String(iss.maximum)}${UNIT[iss.origin] ?? ''}`;
    case 'invalid_format':
      return 'has an invalid format';
    default:
      return undefined;
  }
};

export function issuesToProblems(schema: z.ZodType, issues: readonly z.core.$ZodIssue[]): PathProblem[] {
  const out: PathProblem[] = [];
  for (const iss of issues) {
    if (iss.code === 'unrecognized_keys') {
      const known = knownKeysAt(schema, iss.path);
      for (const key of iss.keys)
        out.push({ path: [...iss.path, key], message: unknownField(iss.path, key, known), atKey: true });
    } else if (iss.code === 'invalid_key') {
      const inner = iss.issues[0]?.message ?? iss.message;
      out.push({ path: [...iss.path], message: `invalid key: ${inner}`, atKey: true });
    } else {
      out.push({ path: [...iss.path], message: iss.message, atKey: false });
    }
  }
  return out;
}

function unknownField(parent: readonly PropertyKey[], key: string, known: string[]): string {
  // Own entries only: a key such as `__proto__` or `constructor` must not find Object's members.
  const at = formatPath([...parent, key]);
  const hint = Object.hasOwn(UNKNOWN_FIELD_HINTS, at) ? UNKNOWN_FIELD_HINTS[at] : undefined;
  if (hint) return `unknown field "${key}": ${hint}`;
  const close = suggest(key, known);
  return `unknown field "${key}"${close ? ` (did you mean "${close}"?)` : ''}`;
}
