// Alertmanager's matcher syntax (the UTF-8 parser of Alertmanager ≥ 0.27, as amtool and the API's
// `filter` accept it): `name="value"`, `name!="value"`, `name=~"regex"`, `name!~"regex"`, several
// separated by commas and optionally enclosed in braces, `{severity="critical", alertname=~"Ceph.*"}`.
// Names and values may be unquoted when they hold no space or reserved character. Parsed here, at
// plan load, so a typo is refused with the field's path instead of being found by Alertmanager mid-rollout.

type MatchOp = '=' | '!=' | '=~' | '!~';

export interface Matcher {
  name: string;
  op: MatchOp;
  value: string;
}

export type ParsedMatchers = { ok: true; matchers: Matcher[] } | { ok: false; error: string };

const RESERVED = new Set([...'{}!=~,\\"\'`']);
const isReserved = (c: string): boolean => RESERVED.has(c) || /\s/u.test(c);

type Token = { kind: 'open' | 'close' | 'comma' | 'op' | 'quoted' | 'unquoted'; text: string; col: number };

/** The token at `i` and where the next one starts, or an error. */
type Lexed = { token: Token; next: number } | string;

function lexOperator(chars: string[], i: number): Lexed {
  const c = chars[i] ?? '';
  const next = chars[i + 1];
  if (c === '!' && next !== '=' && next !== '~') return `column ${i + 1}: expected "!=" or "!~" after "!"`;
  const op = c === '=' ? (next === '~' ? '=~' : '=') : c + (next ?? '');
  return { token: { kind: 'op', text: op, col: i + 1 }, next: i + op.length };
}

function lexQuoted(chars: string[], i: number): Lexed {
  let j = i + 1;
  let escaped = false;
  for (; j < chars.length; j++) {
    if (escaped) escaped = false;
    else if (chars[j] === '\\') escaped = true;
    else if (chars[j] === '"') break;
  }
  if (j >= chars.length) return `column ${i + 1}: unterminated quoted string`;
  return { token: { kind: 'quoted', text: chars.slice(i, j + 1).join(''), col: i + 1 }, next: j + 1 };
}

function lexUnquoted(chars: string[], i: number): Lexed {
  let j = i;
  while (j < chars.length && !isReserved(chars[j] ?? '')) j++;
  return { token: { kind: 'unquoted', text: chars.slice(i, j).join(''), col: i + 1 }, next: j };
}

const PUNCTUATION: Record<string, Token['kind']> = { '{': 'open', '}': 'close', ',': 'comma' };

function lexOne(chars: string[], i: number): Lexed {
  const c = chars[i] ?? '';
  const punctuation = PUNCTUATION[c];
  if (punctuation !== undefined) return { token: { kind: punctuation, text: c, col: i + 1 }, next: i + 1 };
  if (c === '=' || c === '!') return lexOperator(chars, i);
  if (c === '"') return lexQuoted(chars, i);
  if (!isReserved(c)) return lexUnquoted(chars, i);
  return `column ${i + 1}: unexpected "${c}"`;
}

function lex(input: string): Token[] | string {
  const chars = [...input];
  const tokens: Token[] = [];
  let i = 0;
  while (i < chars.length) {
    if (/\s/u.test(chars[i] ?? '')) {
      i++;
      continue;
    }
    const lexed = lexOne(chars, i);
    if (typeof lexed === 'string') return lexed;
    tokens.push(lexed.token);
    i = lexed.next;
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
function regexProblem(value: string): string | undefined {
  if (NOT_RE2.test(value))
    return `"${value}" uses lookaround or a backreference, which Alertmanager's regular expressions (RE2) do not support`;
  try {
    new RegExp(`^(?:${value.replace(/^\(\?i\)/, '')})$`);
    return undefined;
  } catch (err) {
    return `"${value}" is not a valid regular expression: ${err instanceof Error ? err.message.replace(/^Invalid regular expression: /, '') : String(err)}`;
  }
}

const isText = (t: Token | undefined): t is Token & { kind: 'quoted' | 'unquoted' } =>
  t !== undefined && (t.kind === 'quoted' || t.kind === 'unquoted');

/** The matcher whose name is at `i` (name, operator, value), or an error. */
function parseOne(tokens: Token[], i: number): Matcher | string {
  const t = tokens[i];
  if (!isText(t)) return `column ${t?.col ?? 0}: expected a label name, found "${t?.text ?? ''}"`;
  const name = textOf(t);
  if (name === undefined || name === '') return `column ${t.col}: ${t.text} is not a valid label name`;
  return operatorAndValue(tokens, i, t, name);
}

/** The operator and value after the label name `nameToken` (at `i`), or an error. */
function operatorAndValue(tokens: Token[], i: number, nameToken: Token, name: string): Matcher | string {
  const op = tokens[i + 1];
  if (op?.kind !== 'op')
    return `column ${op?.col ?? nameToken.col + nameToken.text.length}: expected an operator such as '=', '!=', '=~' or '!~' after ${nameToken.text}`;
  const v = tokens[i + 2];
  if (!isText(v))
    return `column ${v?.col ?? op.col + op.text.length}: expected a label value after ${nameToken.text}${op.text}`;
  return withValue(name, op.text as MatchOp, v);
}

function withValue(name: string, op: MatchOp, v: Token): Matcher | string {
  const value = textOf(v);
  if (value === undefined) return `column ${v.col}: ${v.text} is not a valid quoted string`;
  const problem = op === '=~' || op === '!~' ? regexProblem(value) : undefined;
  return problem ? `column ${v.col}: ${problem}` : { name, op, value };
}

/** After a matcher: 'comma' (go on), 'end' (the closing brace or the end of input), or an error message. */
function separator(tokens: Token[], i: number, braced: boolean, after: string): string {
  const sep = tokens[i];
  if (sep === undefined) return braced ? 'expected a closing brace "}"' : 'end';
  if (sep.kind === 'comma') return 'comma';
  if (sep.kind !== 'close') return `column ${sep.col}: expected a comma${braced ? ' or "}"' : ''} after ${after}`;
  if (!braced) return `column ${sep.col}: "}" without an opening brace`;
  return i === tokens.length - 1 ? 'end' : `column ${tokens[i + 1]?.col ?? sep.col}: expected the end after "}"`;
}

/** Parses one matcher list; errors name the column, as Alertmanager's parser does. */
export function parseMatchers(input: string): ParsedMatchers {
  const tokens = lex(input);
  if (typeof tokens === 'string') return { ok: false, error: tokens };
  const braced = tokens[0]?.kind === 'open';
  let i = braced ? 1 : 0;
  const matchers: Matcher[] = [];
  const closing = (at: number): boolean => braced && tokens[at]?.kind === 'close' && at === tokens.length - 1;
  // A trailing comma (or an empty list) ends where the next token would be a name.
  while (i < tokens.length && !closing(i)) {
    const m = parseOne(tokens, i);
    if (typeof m === 'string') return { ok: false, error: m };
    matchers.push(m);
    const sep = separator(
      tokens,
      i + 3,
      braced,
      tokens
        .slice(i, i + 3)
        .map((t) => t.text)
        .join(''),
    );
    if (sep === 'end') break;
    if (sep !== 'comma') return { ok: false, error: sep };
    i += 4;
  }
  return completed(tokens, braced, matchers);
}

/** The list once its matchers are read: a braced list must end with its closing brace, and an empty list is refused. */
function completed(tokens: Token[], braced: boolean, matchers: Matcher[]): ParsedMatchers {
  if (braced && tokens.at(-1)?.kind !== 'close') return { ok: false, error: 'expected a closing brace "}"' };
  if (matchers.length === 0)
    return { ok: false, error: 'no matchers: write at least one, such as severity="critical"' };
  return { ok: true, matchers };
}

/** One matcher as Alertmanager's API `filter` parameter and silences take it: quoted name and value. */
export function formatMatcher(m: Matcher): string {
  return `${JSON.stringify(m.name)}${m.op}${JSON.stringify(m.value)}`;
}
