// Warm start of the whole lab (binaries cached): time until control plane, fleet, Talos simulator,
// forge and registry are ready, and the memory the lab's processes use then.
import { startLab } from '../lab/lab.js';
import { processesUsing, rssMiB } from '../lab/procfs.js';

/** MiB per program name of the processes running from `path`. */
function rssByProgram(path: string): Map<string, number> {
  const rss = new Map<string, number>();
  for (const { pid, argv } of processesUsing(path)) {
    const name =
      (argv.find((a) => /(etcd|kube-[a-z-]+)$/.test(a)) ?? argv[0] ?? String(pid)).split('/').at(-1) ?? String(pid);
    rss.set(name, (rss.get(name) ?? 0) + rssMiB(pid));
  }
  return rss;
}

export async function run(): Promise<void> {
  const rounds = 3;
  for (let i = 1; i <= rounds; i++) {
    const started = process.hrtime.bigint();
    const lab = await startLab({ fleet: { nodes: 10, controlPlanes: 3 }, installerVersions: ['v1.13.0'] });
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    const rss = rssByProgram(lab.cluster.dir);
    rss.set('docker-registry', rssMiB(lab.registry.pid));
    const total = [...rss.values()].reduce((a, b) => a + b, 0);
    const parts = [...rss].map(([name, mb]) => `${name} ${mb.toFixed(0)} MiB`).join(', ');
    console.log(
      `round ${i}: lab ready in ${seconds.toFixed(2)} s (10 nodes); RSS ${total.toFixed(0)} MiB (${parts}); node process (fleet, Talos simulator, forge) ${(process.memoryUsage().rss / 2 ** 20).toFixed(0)} MiB`,
    );
    await lab.stop();
  }
}
