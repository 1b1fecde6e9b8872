// The Talos contract client: a small Go program on Siderolabs' own client
// (test/lab/gobuild/talos-contract/, github.com/siderolabs/talos/pkg/machinery) that drives the lab's
// Talos simulator and prints one JSON line per observation. Built by
// test/lab/gobuild/build-talos-contract.sh, which `npm test`'s set-up (test/lab/prepare.sh) runs before
// the first test; found here, never built.
import { join } from 'node:path';
import { builtPart } from './built.js';
import { runToEnd } from './process.js';

let built: Promise<string> | undefined;

/** The path of the built client; rejects, saying what builds it, when the cache lacks a build of these sources. */
export function talosContractBinary(): Promise<string> {
  built ??= builtPart('./gobuild/build-talos-contract.sh').then((dir) => join(dir, 'talos-contract'));
  return built;
}

/** One line the client printed: a case on a node, the gRPC code and message, what it observed. */
export interface ContractObservation {
  case: string;
  node: string;
  code: string;
  message: string;
  value?: unknown;
}

export interface ContractRun {
  observations: ContractObservation[];
  code: number | null;
  stderr: string;
}

/** Runs the client with these flags to its end; every stdout line is an observation. */
export async function runTalosContract(args: string[]): Promise<ContractRun> {
  const r = await runToEnd(await talosContractBinary(), args);
  const observations = r.stdout
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as ContractObservation);
  return { observations, code: r.code, stderr: r.stderr };
}
