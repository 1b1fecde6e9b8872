// Go `time.ParseDuration` syntax ("300s", "5m", "1h30m", "1.5h", "250ms"), because plan files and the
// CRDs of the original project use metav1.Duration. Negative durations are not accepted: no plan
// setting means "less than nothing".

const UNIT_MS: Readonly<Record<string, number>> = {
  ns: 1e-6,
  us: 1e-3,
  µs: 1e-3,
  μs: 1e-3,
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
};

/** RE2-compatible (the apiserver evaluates CRD patterns with Go's regexp). */
export const GO_DURATION_PATTERN = '^(0|([0-9]+(\\.[0-9]+)?(ns|us|µs|μs|ms|s|m|h))+)$';

const WHOLE = new RegExp(GO_DURATION_PATTERN);
const PART = /([0-9]+(?:\.[0-9]+)?)(ns|us|µs|μs|ms|s|m|h)/g;

/** Milliseconds for a Go duration string, or undefined when the text is not one. */
export function parseGoDuration(text: string): number | undefined {
  if (!WHOLE.test(text)) return undefined;
  if (text === '0') return 0;
  let total = 0;
  for (const m of text.matchAll(PART)) {
    const factor = UNIT_MS[m[2] ?? ''];
    if (factor === undefined) return undefined;
    total += Number(m[1]) * factor;
  }
  return total;
}
