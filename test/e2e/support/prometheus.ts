// Reading a Prometheus text exposition in tests: samples by name and label subset.

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** Every sample line of the text (comments skipped). Label values here never contain `"` or `,`. */
export function parseSamples(text: string): Sample[] {
  return text.split('\n').flatMap((line) => {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) return [];
    const labels = Object.fromEntries(
      [...(m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="([^"]*)"/g)].map((l) => [l[1] ?? '', l[2] ?? '']),
    );
    return [{ name: m[1] ?? '', labels, value: Number(m[3]) }];
  });
}

/** Samples named `name` whose labels include `labels`. */
export function samples(all: readonly Sample[], name: string, labels: Record<string, string> = {}): Sample[] {
  return all.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
}

/** The one sample named `name` with `labels` (undefined when absent); throws when several match. */
export function value(all: readonly Sample[], name: string, labels: Record<string, string> = {}): number | undefined {
  const found = samples(all, name, labels);
  if (found.length > 1) throw new Error(`${found.length} samples of ${name} match ${JSON.stringify(labels)}`);
  return found[0]?.value;
}

/** Sum of the samples named `name` whose labels include `labels` (0 when none). */
export function sum(all: readonly Sample[], name: string, labels: Record<string, string> = {}): number {
  return samples(all, name, labels).reduce((a, s) => a + s.value, 0);
}
