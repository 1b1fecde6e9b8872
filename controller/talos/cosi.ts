// Decoding the COSI resources the client reads. Talos sends both proto_spec and yaml_spec; specs
// without a proto of ours (or from a node that leaves proto_spec empty) fall back to the YAML.
import { parse as parseYaml } from 'yaml';
import { MachineConfigSpec } from '../../proto/gen/resource/config/config.js';
import { Layer } from '../../proto/gen/resource/definitions/extensions/extensions.js';
import { BootIDSpec, MachineStatusSpec } from '../../proto/gen/resource/definitions/runtime/runtime.js';
import { RuntimeMachineStage } from '../../proto/gen/resource/definitions/enums/enums.js';
import type { Resource } from '../../proto/gen/v1alpha1/resource.js';
import type { TalosExtension, TalosMachineStatus } from './port.js';

/** Talos `runtime.MachineStage` by number; 0 (`unknown`) is what a status without a stage decodes to. */
const STAGES: Record<number, string> = {
  1: 'booting',
  2: 'installing',
  3: 'maintenance',
  4: 'running',
  5: 'rebooting',
  6: 'shutting down',
  7: 'resetting',
  8: 'upgrading',
};
const STAGE_NAMES = new Set(Object.values(STAGES));

function str(v: unknown): string {
  return typeof v === 'string' ? v : '';
}

function yamlSpec(r: Resource): Record<string, unknown> {
  const y: unknown = parseYaml(r.spec?.yamlSpec ?? '');
  return y !== null && typeof y === 'object' ? (y as Record<string, unknown>) : {};
}

const hasProto = (r: Resource): boolean => (r.spec?.protoSpec?.length ?? 0) > 0;

/** `BootIDs.runtime.talos.dev` → the boot ID ('' when absent). */
export function decodeBootId(r: Resource): string {
  return hasProto(r) && r.spec ? BootIDSpec.decode(r.spec.protoSpec).bootId : str(yamlSpec(r).bootID);
}

/**
 * `SecurityStates.talos.dev/securitystate` → whether the node booted with Secure Boot, or
 * undefined when the spec does not say (read from the YAML: no proto of ours carries it).
 */
export function decodeSecureBoot(r: Resource): boolean | undefined {
  const v = yamlSpec(r).secureBoot;
  return typeof v === 'boolean' ? v : undefined;
}

/** One `ExtensionStatuses.runtime.talos.dev` entry. */
export function decodeExtension(r: Resource): TalosExtension {
  if (hasProto(r) && r.spec) {
    const layer = Layer.decode(r.spec.protoSpec);
    return {
      name: layer.metadata?.name ?? '',
      version: layer.metadata?.version ?? '',
      author: layer.metadata?.author ?? '',
      image: layer.image,
    };
  }
  const y = yamlSpec(r);
  const meta = (y.metadata ?? {}) as Record<string, unknown>;
  return { name: str(meta.name), version: str(meta.version), author: str(meta.author), image: str(y.image) };
}

/**
 * `MachineStatuses.runtime.talos.dev/machine`, or why it cannot be used: a status without a stage,
 * or a stage this controller does not know (deciding on a guess could reboot a busy node).
 */
export function decodeMachineStatus(r: Resource): TalosMachineStatus | { malformed: string } {
  if (hasProto(r) && r.spec) return machineStatusFromProto(r.spec.protoSpec);
  return machineStatusFromYaml(yamlSpec(r));
}

function machineStatusFromProto(protoSpec: Buffer): TalosMachineStatus | { malformed: string } {
  const s = MachineStatusSpec.decode(protoSpec);
  const stage = STAGES[s.stage];
  if (stage === undefined)
    return {
      malformed:
        s.stage === RuntimeMachineStage.MACHINE_STAGE_UNKNOWN
          ? 'has no machine stage'
          : `has machine stage ${s.stage}, unknown to this controller`,
    };
  return {
    stage,
    ready: s.status?.ready ?? false,
    unmetConditions: (s.status?.unmetConditions ?? []).map((c) => ({ name: c.name, reason: c.reason })),
  };
}

function machineStatusFromYaml(y: Record<string, unknown>): TalosMachineStatus | { malformed: string } {
  const stage = str(y.stage);
  if (!STAGE_NAMES.has(stage))
    return {
      malformed:
        stage === '' || stage === 'unknown'
          ? 'has no machine stage'
          : `has machine stage "${stage}", unknown to this controller`,
    };
  const status = (y.status ?? {}) as { ready?: boolean; unmetConditions?: { name: string; reason: string }[] };
  return { stage, ready: status.ready === true, unmetConditions: status.unmetConditions ?? [] };
}

/** `MachineConfigs.config.talos.dev/v1alpha1` → the config YAML; undefined when it carries none. */
export function decodeMachineConfig(r: Resource): string | undefined {
  if (hasProto(r) && r.spec)
    return Buffer.from(MachineConfigSpec.decode(r.spec.protoSpec).yamlMarshalled).toString('utf8');
  // yaml_spec is a YAML string scalar holding the whole config: decode twice.
  const inner: unknown = parseYaml(r.spec?.yamlSpec ?? '');
  return typeof inner === 'string' ? inner : undefined;
}
