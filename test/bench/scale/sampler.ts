// What a process costs, from /proc: CPU seconds (user + system) and resident memory, sampled once a
// second so the peak is seen (VmHWM is the kernel's own peak; the samples give the curve).
import { readFileSync } from 'node:fs';
import { processesUsing } from '../../lab/procfs.js';

const TICKS_PER_SECOND = 100;

/** User + system CPU seconds of a process so far; NaN once it is gone. */
export function cpuSeconds(pid: number): number {
  try {
    const fields = (readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1] ?? '').split(' ');
    return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
  } catch {
    return NaN;
  }
}

export const LAB_PROGRAMS = ['etcd', 'kube-apiserver', 'kube-controller-manager'] as const;

/**
 * CPU seconds so far of this process (`self`: the lab's simulators, observer and interposer) and of
 * the lab's programs that run from `clusterDir` (etcd, kube-apiserver, kube-controller-manager):
 * where the machine's cores went, diffed over a span.
 */
export function labCpuSeconds(clusterDir: string | undefined): Record<string, number> {
  const own = process.cpuUsage();
  const cpu: Record<string, number> = { self: (own.user + own.system) / 1e6 };
  for (const { pid, argv } of clusterDir === undefined ? [] : processesUsing(clusterDir)) {
    const program = LAB_PROGRAMS.find((p) => argv.some((a) => a.endsWith(`/${p}`)));
    if (program) cpu[program] = (cpu[program] ?? 0) + cpuSeconds(pid);
  }
  return cpu;
}

/**
 * VmRSS and VmHWM (peak) in MiB, and what the resident memory is: anonymous (heap, malloc, stacks),
 * file-backed (the node binary's and libraries' pages) and shared; NaN once the process is gone.
 */
export function memoryMiB(pid: number): { rss: number; peak: number; anon: number; file: number; shmem: number } {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const mib = (field: string): number => Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1] ?? NaN) / 1024;
    return {
      rss: mib('VmRSS'),
      peak: mib('VmHWM'),
      anon: mib('RssAnon'),
      file: mib('RssFile'),
      shmem: mib('RssShmem'),
    };
  } catch {
    return { rss: NaN, peak: NaN, anon: NaN, file: NaN, shmem: NaN };
  }
}

/** The resident memory's parts at the highest RSS sampled (MiB). */
export interface RssSplit {
  rss: number;
  anon: number;
  file: number;
  shmem: number;
}

export interface Sampler {
  /** Highest VmHWM seen (MiB). */
  peakRss(): number;
  /** The parts of the highest VmRSS sampled: the split VmHWM cannot give. */
  peakSplit(): RssSplit;
  /** Highest value `heap()` returned (bytes). */
  peakHeap(): number;
  stop(): Promise<void>;
}

/** Samples memory every second and, every `heapEveryMs`, `heap()` (e.g. a metrics scrape of heap used). */
export function sample(pid: number, heap: () => Promise<number | undefined>, heapEveryMs = 5000): Sampler {
  let peakRss = 0;
  let peakSplit: RssSplit = { rss: 0, anon: 0, file: 0, shmem: 0 };
  let peakHeap = 0;
  let heapBusy: Promise<void> = Promise.resolve();
  const readHeap = (): void => {
    heapBusy = heap().then(
      (h) => void (peakHeap = Math.max(peakHeap, h ?? 0)),
      () => undefined,
    );
  };
  const rssTimer = setInterval(() => {
    const m = memoryMiB(pid);
    if (!Number.isNaN(m.peak)) peakRss = Math.max(peakRss, m.peak);
    if (m.rss > peakSplit.rss) peakSplit = { rss: m.rss, anon: m.anon, file: m.file, shmem: m.shmem };
  }, 1000);
  const heapTimer = setInterval(readHeap, heapEveryMs);
  readHeap();
  return {
    peakRss: () => Math.max(peakRss, memoryMiB(pid).peak || 0),
    peakSplit: () => peakSplit,
    peakHeap: () => peakHeap,
    stop: async () => {
      clearInterval(rssTimer);
      clearInterval(heapTimer);
      readHeap();
      await heapBusy;
    },
  };
}
