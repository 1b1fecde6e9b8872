// `npm run lab -- up [options]`: starts the whole lab in the foreground, prints how to reach each
// part (KUBECONFIG=, TALOS_ENDPOINT=, TALOSCONFIG=, GIT_URL=, REGISTRY=), then `lab ready`, and
// stops everything on SIGINT/SIGTERM.
import { Command, InvalidArgumentError } from 'commander';
import { startLab, type LabOptions } from './lab.js';
import { readFleetFile } from './fleet/file.js';

const positiveInt = (value: string): number => {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError('expected a whole number of at least 1');
  return n;
};
const version = (value: string): string => {
  if (!/^v\d+\.\d+\.\d+$/.test(value)) throw new InvalidArgumentError('expected a version like v1.12.4');
  return value;
};

const program = new Command('lab').description('the KangalPatch lab: a real control plane, a simulated Talos fleet, a git forge and a registry');

program
  .command('up')
  .description('start the lab in the foreground; Ctrl-C stops it')
  .option('--nodes <n>', 'nodes in the fleet, control plane included', positiveInt, 3)
  .option('--control-planes <n>', 'control-plane nodes', positiveInt, 1)
  .option('--talos-version <v>', 'Talos version of every node', version, 'v1.12.4')
  .option('--kubernetes-version <v>', 'kubelet version of every node', version, 'v1.35.2')
  .option('--fleet <file>', 'YAML list of nodes (name, role, talosVersion, kubernetesVersion, schematic, internalIP, labels) instead of counts')
  .action(async (opts: { nodes: number; controlPlanes: number; talosVersion: string; kubernetesVersion: string; fleet?: string }) => {
    const labOptions: LabOptions = opts.fleet
      ? { nodes: readFleetFile(opts.fleet) }
      : { fleet: { nodes: opts.nodes, controlPlanes: Math.min(opts.controlPlanes, opts.nodes), talosVersion: opts.talosVersion, kubernetesVersion: opts.kubernetesVersion } };
    const started = Date.now();
    const lab = await startLab({ ...labOptions, verbose: true });
    for (const [key, value] of Object.entries(lab.env)) console.log(`${key}=${value}`);
    console.log(`lab ready (${((Date.now() - started) / 1000).toFixed(1)} s)`);
    let stopping = false;
    const shutdown = (signal: string): void => {
      if (stopping) return;
      stopping = true;
      console.error(`${signal}: stopping the lab`);
      lab.stop().then(
        () => process.exit(0),
        (err: unknown) => {
          console.error(err);
          process.exit(1);
        },
      );
    };
    process.on('SIGINT', () => shutdown('SIGINT'));
    process.on('SIGTERM', () => shutdown('SIGTERM'));
  });

program.parseAsync().catch((err: unknown) => {
  console.error(`lab: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
