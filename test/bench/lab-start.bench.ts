// Warm start of the whole lab (binaries cached): time until control plane, fleet, Talos simulator,
// forge and registry are ready, and the memory the lab's processes use then.
import { readFileSync, readdirSync } from 'node:fs';
import { startLab } from '../lab/lab.js';

function rssOfProcessesUsing(path: string): Map<string, number> {
  const rss = new Map<string, number>();
  for (const pid of readdirSync('/proc').filter((e) => /^\d+$/.test(e))) {
    try {
      const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
      if (!cmdline.some((a) => a.includes(path))) continue;
      const kb = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);
      const name = (cmdline.find((a) => /(etcd|kube-[a-z-]+|docker-registry|git)$/.test(a)) ?? cmdline[0] ?? pid).split('/').at(-1) ?? pid;
      rss.set(name, (rss.get(name) ?? 0) + kb / 1024);
    } catch {
      // The process ended while we looked.
    }
  }
  return rss;
}

function rssOfPid(pid: number): number {
  try {
    return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024;
  } catch {
    return 0;
  }
}

export async function run(): Promise<void> {
  const rounds = 3;
  for (let i = 1; i <= rounds; i++) {
    const started = process.hrtime.bigint();
    const lab = await startLab({ fleet: { nodes: 10, controlPlanes: 3 }, installerVersions: ['v1.13.0'] });
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    const rss = rssOfProcessesUsing(lab.cluster.dir);
    rss.set('docker-registry', rssOfPid(lab.registry.pid));
    const total = [...rss.values()].reduce((a, b) => a + b, 0);
    const parts = [...rss].map(([name, mb]) => `${name} ${mb.toFixed(0)} MiB`).join(', ');
    console.log(`round ${i}: lab ready in ${seconds.toFixed(2)} s (10 nodes); RSS ${total.toFixed(0)} MiB (${parts}); node process (fleet, Talos simulator, forge) ${(process.memoryUsage().rss / 2 ** 20).toFixed(0)} MiB`);
    await lab.stop();
  }
}
