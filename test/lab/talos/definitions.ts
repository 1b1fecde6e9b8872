// The `meta` ResourceDefinitions a simulated node serves, one per COSI type it knows, as COSI
// registers them: each type's own ResourceDefinition() (siderolabs/talos pkg/machinery/resources/...:
// hand-written aliases, print columns, sensitivity), completed by ResourceDefinitionSpec.Fill
// (cosi-project/runtime pkg/resource/meta/spec/resource_definition.go) and marshalled with both specs:
// the protobuf one (MarshalProto: cosi.resource.meta.ResourceDefinitionSpec, which the Go client and
// talosctl decode to resolve `talosctl get ms`) and the YAML one (the struct's yaml tags).
import { ResourceDefinitionSpec, ResourceDefinitionSpec_Sensitivity } from '../../../proto/gen/v1alpha1/meta.js';

interface PrintColumn {
  name: string;
  jsonPath: string;
}

/** What a type's ResourceDefinition() declares itself (the rest is Fill's). */
interface Declared {
  aliases?: readonly string[];
  printColumns?: readonly PrintColumn[];
}

const col = (name: string, jsonPath: string): PrintColumn => ({ name, jsonPath });

/**
 * Per type, as its ResourceDefinition() declares it: runtime/machine_status.go, version.go,
 * extension_status.go (alias `extensions`), boot_id.go, image_factory_schematic.go,
 * security_status.go, v1alpha1/service.go (alias `svc`), config/machine_config.go,
 * k8s/kubelet_spec.go, apiserver_config.go, controllermanager_config.go, scheduler_config.go, and
 * cosi-project/runtime pkg/resource/meta/resource_definition.go (alias `api-resources`).
 */
const DECLARED: Record<string, Declared> = {
  'MachineStatuses.runtime.talos.dev': { printColumns: [col('Stage', '{.stage}'), col('Ready', '{.status.ready}')] },
  'Versions.runtime.talos.dev': { printColumns: [col('Name', '{.name}'), col('Version', '{.version}')] },
  'ExtensionStatuses.runtime.talos.dev': {
    aliases: ['extensions'],
    printColumns: [col('Name', '{.metadata.name}'), col('Version', '{.metadata.version}')],
  },
  'BootIDs.runtime.talos.dev': { printColumns: [col('Boot ID', '{.bootID}')] },
  'ImageFactorySchematics.runtime.talos.dev': {
    printColumns: [col('Schematic ID', '{.schematicId}'), col('Flavor', '{.flavor}'), col('API URL', '{.apiUrl}')],
  },
  'SecurityStates.talos.dev': {
    printColumns: [
      col('SecureBoot', '{.secureBoot}'),
      col('UKISigningKeyFingerprint', '{.ukiSigningKeyFingerprint}'),
      col('PCRSigningKeyFingerprint', '{.pcrSigningKeyFingerprint}'),
      col('SELinuxState', '{.selinuxState}'),
      col('ModuleSignatureEnforced', '{.moduleSignatureEnforced}'),
    ],
  },
  'Services.v1alpha1.talos.dev': {
    aliases: ['svc'],
    printColumns: [col('Running', '{.running}'), col('Healthy', '{.healthy}'), col('Health Unknown', '{.unknown}')],
  },
  'ResourceDefinitions.meta.cosi.dev': { aliases: ['api-resources'], printColumns: [col('Aliases', '{.aliases[:]}')] },
};

/**
 * go-pluralize's Singular for the names the simulator serves: `…uses` → `…us` (MachineStatuses),
 * otherwise the final `s` goes (Services, BootIDs, ResourceDefinitions).
 */
function singular(name: string): string {
  return name.endsWith('uses') ? name.slice(0, -2) : name.replace(/s$/, '');
}

/** The filled spec, as upstream's ResourceDefinitionSpec after Fill (field order of its yaml tags). */
export interface FilledDefinition {
  type: string;
  displayType: string;
  defaultNamespace: string;
  aliases: string[];
  allAliases: string[];
  printColumns: PrintColumn[];
  sensitivity?: 'sensitive';
}

/**
 * ResourceDefinitionSpec.Fill: the display type is the singular name; the aliases are the declared
 * ones, then the lower-cased singular and, when the name has more than one capital, its initials
 * (`ms`) and, unless they end in S, the initials plus `s` (`mc`, `mcs`); all aliases are the
 * lower-cased name, the name with each prefix of the suffix (`machinestatuses.runtime`, …), then the aliases.
 */
export function fillDefinition(type: string, defaultNamespace: string, sensitive: boolean): FilledDefinition {
  const [name = '', ...suffix] = type.split('.');
  const displayType = singular(name);
  const declared = DECLARED[type] ?? {};
  const aliases = [...(declared.aliases ?? []), displayType.toLowerCase()];
  const initials = name.replace(/[^A-Z]/g, '');
  if (initials.length > 1) {
    aliases.push(initials.toLowerCase());
    if (!initials.endsWith('S')) aliases.push(`${initials.toLowerCase()}s`);
  }
  const lower = name.toLowerCase();
  const allAliases = [
    lower,
    ...suffix.slice(0, -1).map((_, i) => [lower, ...suffix.slice(0, i + 1)].join('.')),
    ...aliases,
  ];
  return {
    type,
    displayType,
    defaultNamespace,
    aliases,
    allAliases,
    printColumns: (declared.printColumns ?? []).map((c) => ({ ...c })),
    ...(sensitive ? { sensitivity: 'sensitive' as const } : {}),
  };
}

/** The protobuf spec (resource_definition.go MarshalProto). */
export function definitionProto(d: FilledDefinition): Uint8Array {
  return ResourceDefinitionSpec.encode({
    resourceType: d.type,
    displayType: d.displayType,
    defaultNamespace: d.defaultNamespace,
    aliases: d.aliases,
    allAliases: d.allAliases,
    printColumns: d.printColumns,
    sensitivity: d.sensitivity
      ? ResourceDefinitionSpec_Sensitivity.SENSITIVE
      : ResourceDefinitionSpec_Sensitivity.NON_SENSITIVE,
  }).finish();
}
