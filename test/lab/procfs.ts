// What /proc says about the lab's processes: which ones run from a directory, and their memory.
import { readdirSync, readFileSync } from 'node:fs';

export interface LabProcess {
  pid: number;
  argv: string[];
}

/** Processes whose command line mentions `path` (their run dir, data dir or config). */
export function processesUsing(path: string): LabProcess[] {
  const found: LabProcess[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const argv = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').filter(Boolean);
      if (argv.some((a) => a.includes(path))) found.push({ pid: Number(entry), argv });
    } catch {
      // The process ended while we looked.
    }
  }
  return found;
}

/** Resident memory of a process in MiB; 0 when it is gone. */
export function rssMiB(pid: number): number {
  try {
    return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024;
  } catch {
    return 0;
  }
}
