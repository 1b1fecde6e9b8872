// The informer's cache: views by key, plus one optional secondary index (pods by node name).
export class ViewStore<V> {
  private readonly views = new Map<string, V>();
  private readonly index = new Map<string, Set<string>>();

  constructor(private readonly indexOf?: (view: V) => string | undefined) {}

  get(key: string): V | undefined {
    return this.views.get(key);
  }

  keys(): string[] {
    return [...this.views.keys()];
  }

  values(): V[] {
    return [...this.views.values()];
  }

  byIndex(value: string): V[] {
    const keys = this.index.get(value);
    if (!keys) return [];
    const out: V[] = [];
    for (const k of keys) {
      const v = this.views.get(k);
      if (v !== undefined) out.push(v);
    }
    return out;
  }

  set(key: string, view: V): V | undefined {
    const old = this.views.get(key);
    this.unindex(key, old);
    this.views.set(key, view);
    const value = this.indexOf?.(view);
    if (value !== undefined) {
      let keys = this.index.get(value);
      if (!keys) this.index.set(value, (keys = new Set()));
      keys.add(key);
    }
    return old;
  }

  delete(key: string): V | undefined {
    const old = this.views.get(key);
    if (old === undefined) return undefined;
    this.unindex(key, old);
    this.views.delete(key);
    return old;
  }

  private unindex(key: string, old: V | undefined): void {
    if (old === undefined || !this.indexOf) return;
    const value = this.indexOf(old);
    if (value === undefined) return;
    const keys = this.index.get(value);
    keys?.delete(key);
    if (keys?.size === 0) this.index.delete(value);
  }
}
