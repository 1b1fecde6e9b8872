// `npm run lab -- up [options]`: starts the whole lab in the foreground, prints how to reach each
// part (KUBECONFIG=, TALOS_ENDPOINT=, TALOSCONFIG=, GIT_URL=, REGISTRY=), then `lab ready`, and
// stops everything on SIGINT/SIGTERM.
import { Command, InvalidArgumentError } from 'commander';
import { startLab, type LabOptions } from './lab.js';
import { readFleetFile } from './fleet/file.js';
import { DEMO_WORKLOADS, demoNodes, publishInstallers } from './demo-fleet.js';

const positiveInt = (value: string): number => {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError('expected a whole number of at least 1');
  return n;
};
const version = (value: string): string => {
  if (!/^v\d+\.\d+\.\d+$/.test(value)) throw new InvalidArgumentError('expected a version like v1.12.4');
  return value;
};

const versions = (value: string): string[] => value.split(',').map((v) => version(v.trim()));

const program = new Command('lab').description(
  'the KangalPatch lab: a real control plane, a simulated Talos fleet, a git forge and a registry',
);

program
  .command('up')
  .description('start the lab in the foreground; Ctrl-C stops it')
  .option('--nodes <n>', 'nodes in the fleet, control plane included', positiveInt, 3)
  .option('--control-planes <n>', 'control-plane nodes', positiveInt, 1)
  .option('--talos-version <v>', 'Talos version of every node', version, 'v1.12.4')
  .option('--kubernetes-version <v>', 'kubelet version of every node', version, 'v1.35.2')
  .option(
    '--fleet <file>',
    'YAML list of nodes (name, role, talosVersion, kubernetesVersion, schematic, internalIP, labels) instead of counts',
  )
  .option(
    '--demo-fleet',
    "the demo's 12 nodes instead of counts: 3 control plane, 9 workers labelled for examples/custom-groups.yaml",
    false,
  )
  .option(
    '--workloads',
    "run the demo's workloads with PodDisruptionBudgets (shop/web, shop/postgres, ml/trainer, monitoring/node-exporter)",
    false,
  )
  .option(
    '--installer-versions <list>',
    'extra installer tags to publish, comma-separated (siderolabs/installer and the nocloud factory installer of the lab schematic), e.g. v1.12.5,v1.13.2',
    versions,
    [],
  )
  .action(
    async (opts: {
      nodes: number;
      controlPlanes: number;
      talosVersion: string;
      kubernetesVersion: string;
      fleet?: string;
      demoFleet: boolean;
      workloads: boolean;
      installerVersions: string[];
    }) => {
      if (opts.workloads && !opts.fleet && !opts.demoFleet) {
        throw new Error(
          '--workloads places pods on nodes labelled environment=production, workload=database and accelerator=nvidia: add --demo-fleet (or a --fleet file with those labels)',
        );
      }
      const labOptions: LabOptions = opts.fleet
        ? { nodes: readFleetFile(opts.fleet) }
        : opts.demoFleet
          ? { nodes: demoNodes() }
          : {
              fleet: {
                nodes: opts.nodes,
                controlPlanes: Math.min(opts.controlPlanes, opts.nodes),
                talosVersion: opts.talosVersion,
                kubernetesVersion: opts.kubernetesVersion,
              },
            };
      const started = Date.now();
      const lab = await startLab({ ...labOptions, workloads: opts.workloads ? DEMO_WORKLOADS : [], verbose: true });
      await publishInstallers(lab.registry, opts.installerVersions);
      if (opts.installerVersions.length)
        console.error(`[lab] published installers ${opts.installerVersions.join(', ')}`);
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
      // Before `lab ready`: whoever reads that line may signal at once, and a signal with no
      // listener would kill the process with the lab still running.
      process.on('SIGINT', () => shutdown('SIGINT'));
      process.on('SIGTERM', () => shutdown('SIGTERM'));
      for (const [key, value] of Object.entries(lab.env)) console.log(`${key}=${value}`);
      console.log(`lab ready (${((Date.now() - started) / 1000).toFixed(1)} s)`);
    },
  );

program.parseAsync().catch((err: unknown) => {
  console.error(`lab: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
