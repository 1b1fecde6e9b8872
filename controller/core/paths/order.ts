// The order of the hops: the Talos steps and the Kubernetes steps, each list kept in its own order,
// interleaved so that every state on the way is supported. State (i, j) is the fleet after the
// first i Talos and the first j Kubernetes steps; it does not depend on how they were interleaved,
// because a Talos step changes only Talos versions and a Kubernetes step only kubelets.
//
// The rule: Talos first, whenever the next Talos step is supported with Kubernetes as it is and the
// remaining steps can still be ordered from there; otherwise the next Kubernetes step. So Kubernetes
// goes first exactly when the next Talos needs a newer Kubernetes (or, with a table whose windows
// shrink, when the current Talos must still carry the Kubernetes step). Kubernetes thus moves as late
// as it can, on the newest Talos reached so far, and Talos never waits for a step it does not need.

export type Move = 'talos' | 'kubernetes';

export type Order = { ok: true; moves: Move[] } | { ok: false; stuck: { talos: number; kubernetes: number } };

/** `supported(i, j)`: every node's pair is supported after i Talos and j Kubernetes steps. */
export type Supported = (talos: number, kubernetes: number) => boolean;

/** grid[i][j]: whether (i, j) is supported and the end can be reached from it through supported states. */
function finishing(talosSteps: number, kubernetesSteps: number, supported: Supported): boolean[][] {
  const grid = Array.from({ length: talosSteps + 1 }, () => Array.from({ length: kubernetesSteps + 1 }, () => false));
  for (let i = talosSteps; i >= 0; i--) {
    for (let j = kubernetesSteps; j >= 0; j--) {
      const end = i === talosSteps && j === kubernetesSteps;
      const onward = (grid[i + 1]?.[j] ?? false) || (grid[i]?.[j + 1] ?? false);
      (grid[i] ?? [])[j] = (end || onward) && supported(i, j);
    }
  }
  return grid;
}

/** (i, j) is the start, or one step after a state already reached. */
function reachable(reach: readonly (readonly boolean[])[], i: number, j: number): boolean {
  return (i === 0 && j === 0) || (reach[i - 1]?.[j] ?? false) || (reach[i]?.[j - 1] ?? false);
}

/** The furthest state reachable from (0, 0) through supported states (most steps; then most Talos steps). */
function furthest(
  talosSteps: number,
  kubernetesSteps: number,
  supported: Supported,
): { talos: number; kubernetes: number } {
  const reach = Array.from({ length: talosSteps + 1 }, () => Array.from({ length: kubernetesSteps + 1 }, () => false));
  let best = { talos: 0, kubernetes: 0 };
  for (let i = 0; i <= talosSteps; i++) {
    for (let j = 0; j <= kubernetesSteps; j++) {
      const here = reachable(reach, i, j) && supported(i, j);
      (reach[i] ?? [])[j] = here;
      if (here && i + j >= best.talos + best.kubernetes) best = { talos: i, kubernetes: j };
    }
  }
  return best;
}

/** The interleaving by the rule above, or the furthest supported state when there is none. */
export function orderSteps(talosSteps: number, kubernetesSteps: number, supported: Supported): Order {
  const memo = new Map<string, boolean>();
  const cached: Supported = (i, j) => {
    const key = `${i},${j}`;
    const known = memo.get(key);
    if (known !== undefined) return known;
    const value = supported(i, j);
    memo.set(key, value);
    return value;
  };
  const grid = finishing(talosSteps, kubernetesSteps, cached);
  if (!(grid[0]?.[0] ?? false)) return { ok: false, stuck: furthest(talosSteps, kubernetesSteps, cached) };
  const moves: Move[] = [];
  for (let i = 0, j = 0; i < talosSteps || j < kubernetesSteps;) {
    const talos = grid[i + 1]?.[j] ?? false;
    moves.push(talos ? 'talos' : 'kubernetes');
    if (talos) i++;
    else j++;
  }
  return { ok: true, moves };
}
