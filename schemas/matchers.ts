// Alertmanager's matcher syntax (the UTF-8 parser of Alertmanager ≥ 0.27, as amtool and the API's
// `filter` accept it): `name="value"`, `name!="value"`, `name=~"regex"`, `name!~"regex"`, several
// separated by commas and optionally enclosed in braces, `{severity="critical", alertname=~"Ceph.*"}`.
// Names and values may be unquoted when they hold no space or reserved character. Parsed here, at
// plan load, so a typo is refused with the field's path instead of being found by Alertmanager mid-rollout.

export type MatchOp = '=' | '!=' | '=~' | '!~';

export interface Matcher {
  name: string;
  op: MatchOp;
  value: string;
}

export type ParsedMatchers = { ok: true; matchers: Matcher[] } | { ok: false; error: string };

const RESERVED = new Set([...'{}!=~,\\"\'`']);
const isReserved = (c: string): boolean => RESERVED.has(c) || /\s/u.test(c);

type Token = { kind: 'open' | 'close' | 'comma' | 'op' | 'quoted' | 'unquoted'; text: string; col: number };

function lex(input: string): Token[] | string {
  const chars = [...input];
  const tokens: Token[] = [];
  let i = 0;
  while (i < chars.length) {
    const c = chars[i] ?? '';
    const col = i + 1;
    if (/\s/u.test(c)) {
      i++;
    } else if (c === '{' || c === '}' || c === ',') {
      tokens.push({ kind: c === '{' ? 'open' : c === '}' ? 'close' : 'comma', text: c, col });
      i++;
    } else if (c === '=' || c === '!') {
      const next = chars[i + 1];
      if (c === '!' && next !== '=' && next !== '~') return `column ${col}: expected "!=" or "!~" after "!"`;
      const op = c === '=' ? (next === '~' ? '=~' : '=') : c + (next ?? '');
      tokens.push({ kind: 'op', text: op, col });
      i += op.length;
    } else if (c === '"') {
      let j = i + 1;
      let escaped = false;
      for (; j < chars.length; j++) {
        if (escaped) escaped = false;
        else if (chars[j] === '\\') escaped = true;
        else if (chars[j] === '"') break;
      }
      if (j >= chars.length) return `column ${col}: unterminated quoted string`;
      tokens.push({ kind: 'quoted', text: chars.slice(i, j + 1).join(''), col });
      i = j + 1;
    } else if (!isReserved(c)) {
      let j = i;
      while (j < chars.length && !isReserved(chars[j] ?? '')) j++;
      tokens.push({ kind: 'unquoted', text: chars.slice(i, j).join(''), col });
      i = j;
    } else {
      return `column ${col}: unexpected "${c}"`;
    }
  }
  return tokens;
}

/** The text of a name or value token: a quoted one is unescaped as Go's strconv.Unquote does (for the escapes JSON shares). */
function textOf(t: Token): string | undefined {
  if (t.kind === 'unquoted') return t.text;
  try {
    const v: unknown = JSON.parse(t.text);
    return typeof v === 'string' ? v : undefined;
  } catch {
    return undefined;
  }
}

// RE2 (Alertmanager's regex engine) has no lookaround and no backreferences; JavaScript has both.
const NOT_RE2 = /\(\?<?[=!]|\\[1-9]|\\k</;

/** Why `value` is no regex Alertmanager accepts, or undefined. Checked as Alertmanager anchors it: `^(?:value)$`. */
export function regexProblem(value: string): string | undefined {
  if (NOT_RE2.test(value)) return `"${value}" uses lookaround or a backreference, which Alertmanager's regular expressions (RE2) do not support`;
  try {
    new RegExp(`^(?:${value.replace(/^\(\?i\)/, '')})$`);
    return undefined;
  } catch (err) {
    return `"${value}" is not a valid regular expression: ${err instanceof Error ? err.message.replace(/^Invalid regular expression: /, '') : String(err)}`;
  }
}

/** Parses one matcher list; errors name the column, as Alertmanager's parser does. */
export function parseMatchers(input: string): ParsedMatchers {
  const tokens = lex(input);
  if (typeof tokens === 'string') return { ok: false, error: tokens };
  let i = 0;
  const braced = tokens[0]?.kind === 'open';
  if (braced) i++;
  const matchers: Matcher[] = [];
  for (;;) {
    const t = tokens[i];
    if (t === undefined) {
      if (braced) return { ok: false, error: 'expected a closing brace "}"' };
      break;
    }
    if (t.kind === 'close') {
      if (!braced) return { ok: false, error: `column ${t.col}: "}" without an opening brace` };
      if (i !== tokens.length - 1) return { ok: false, error: `column ${tokens[i + 1]?.col ?? t.col}: expected the end after "}"` };
      break;
    }
    if (t.kind !== 'quoted' && t.kind !== 'unquoted') return { ok: false, error: `column ${t.col}: expected a label name, found "${t.text}"` };
    const name = textOf(t);
    if (name === undefined || name === '') return { ok: false, error: `column ${t.col}: ${t.text} is not a valid label name` };
    const op = tokens[i + 1];
    if (op?.kind !== 'op') return { ok: false, error: `column ${op?.col ?? t.col + t.text.length}: expected an operator such as '=', '!=', '=~' or '!~' after ${t.text}` };
    const v = tokens[i + 2];
    if (v === undefined || (v.kind !== 'quoted' && v.kind !== 'unquoted')) return { ok: false, error: `column ${v?.col ?? op.col + op.text.length}: expected a label value after ${t.text}${op.text}` };
    const value = textOf(v);
    if (value === undefined) return { ok: false, error: `column ${v.col}: ${v.text} is not a valid quoted string` };
    const matcher: Matcher = { name, op: op.text as MatchOp, value };
    if (matcher.op === '=~' || matcher.op === '!~') {
      const problem = regexProblem(value);
      if (problem) return { ok: false, error: `column ${v.col}: ${problem}` };
    }
    matchers.push(matcher);
    i += 3;
    const sep = tokens[i];
    if (sep === undefined) continue;
    if (sep.kind === 'comma') {
      i++;
      continue;
    }
    if (sep.kind !== 'close') return { ok: false, error: `column ${sep.col}: expected a comma${braced ? ' or "}"' : ''} after ${t.text}${op.text}${v.text}` };
  }
  if (matchers.length === 0) return { ok: false, error: 'no matchers: write at least one, such as severity="critical"' };
  return { ok: true, matchers };
}

/** One matcher as Alertmanager's API `filter` parameter and silences take it: quoted name and value. */
export function formatMatcher(m: Matcher): string {
  return `${JSON.stringify(m.name)}${m.op}${JSON.stringify(m.value)}`;
}
