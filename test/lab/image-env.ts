// The controller's runtime environment as it ships, in one place: the image sets it (Dockerfile ENV),
// the Deployment repeats the heap settings where an operator sees them (the chart's
// heapPercentOfMemoryLimit, kustomize/manager/deployment.yaml). The labs, benches, soak and chaos
// runs that start the controller outside the image take their environment from here, so the memory
// they report is the shipped configuration's; the container-image test checks that the image carries
// each of these, and test/unit/kustomize/runtime-env.test.ts that the Dockerfile, the chart's default
// and kustomize agree with this file.

/** What the image sets for glibc's malloc (BENCHMARKS.md "What the resident memory is"). */
const IMAGE_MALLOC_ENV: Readonly<Record<string, string>> = {
  MALLOC_ARENA_MAX: '2',
  MALLOC_MMAP_THRESHOLD_: '131072',
  MALLOC_TRIM_THRESHOLD_: '131072',
};

/**
 * V8's old space as a share of the container's memory limit. Node (22.21 and later, and the 24 line:
 * checked on the pinned 24.22.3) reads the limit
 * from the cgroup (memory.max, or memory.limit_in_bytes on cgroup v1) and falls back to the
 * machine's memory when there is none; so a user who raises `resources.limits.memory` raises the
 * heap with it. 25 % of the Deployment's 512 MiB is a 128 MiB old space.
 */
export const HEAP_PERCENT_OF_MEMORY_LIMIT = 25;

/** V8's young-generation semi-space, MiB (default 16 on 64-bit; 4 costs no measurable CPU here, BENCHMARKS.md). */
const SEMI_SPACE_MIB = 4;

/** The Deployment's memory limit (chart default `resources.limits.memory`, kustomize), MiB. */
export const DEFAULT_MEMORY_LIMIT_MIB = 512;

/** NODE_OPTIONS for a heap of `percent` % of the memory limit. */
export const heapNodeOptions = (percent: number = HEAP_PERCENT_OF_MEMORY_LIMIT): string =>
  `--max-old-space-size-percentage=${percent} --max-semi-space-size=${SEMI_SPACE_MIB}`;

/** NODE_OPTIONS as the image and the Deployment set them. */
export const IMAGE_NODE_OPTIONS = heapNodeOptions();

/** Everything the image sets in the controller's environment (Dockerfile ENV lines). */
export const IMAGE_ENV: Readonly<Record<string, string>> = {
  NODE_ENV: 'production',
  ...IMAGE_MALLOC_ENV,
  NODE_OPTIONS: IMAGE_NODE_OPTIONS,
};

/**
 * `nodeOptions` with `--max-old-space-size-percentage=P` replaced by the old-space size Node derives
 * from it in a container limited to `memoryLimitMiB`: floor(limit × P / 100) MiB (node_options.cc;
 * the same heap_size_limit either way, checked on this Node). The lab runs the controller as a plain
 * process in no memory cgroup of its own, where the percentage would apply to the whole machine.
 */
export function nodeOptionsAtLimit(nodeOptions: string, memoryLimitMiB: number): string {
  return nodeOptions.replace(
    /--max-old-space-size-percentage=(\S+)/,
    (_, p: string) => `--max-old-space-size=${Math.floor((memoryLimitMiB * Number(p)) / 100)}`,
  );
}

/**
 * The environment for a controller started by the lab as a pod with the shipped settings and a
 * memory limit of `memoryLimitMiB` would run: the image's environment, its heap percentage
 * resolved for that limit. `nodeOptions` replaces the shipped NODE_OPTIONS (an A/B; '' for none).
 */
export function controllerEnv(o: { memoryLimitMiB?: number; nodeOptions?: string } = {}): Record<string, string> {
  const { NODE_OPTIONS: shipped = '', ...rest } = IMAGE_ENV;
  const nodeOptions = nodeOptionsAtLimit(o.nodeOptions ?? shipped, o.memoryLimitMiB ?? DEFAULT_MEMORY_LIMIT_MIB);
  return { ...rest, NODE_OPTIONS: nodeOptions };
}
