// Reading and changing the image references of a Talos machine config. The config is the node's
// full, multi-document YAML. Each component's image lives in one place, chosen the way
// `talosctl upgrade-k8s` (release-1.14) chooses it:
//   - the Talos 1.14 multi-document config document of the component (`apiVersion: v1alpha1`,
//     `kind: KubeletConfig` / `KubeAPIServerConfig` / ...), key `image`, when the config has one:
//     Talos uses the document, so a v1alpha1 field next to it is stale and never touched;
//   - otherwise the component's v1alpha1 path (`machine.kubelet.image`, `cluster.apiServer.image`, ...)
//     in the v1alpha1 document (the one with `version: v1alpha1`).
// A present document without `image`, or a v1alpha1 document without the path, reads as absent
// (Talos's default image for its version); a component with neither a document nor a v1alpha1
// document also reads as absent. A config with no v1alpha1 document is readable as long as it has
// at least one component document. Two documents of the same kind are a problem (Talos rejects them).
// Writing goes through the yaml Document API: comments, key order and the other documents are kept.
import { parseAllDocuments, type Document } from 'yaml';
import type { ImageComponent } from './images.js';

const PATHS: Record<ImageComponent, readonly string[]> = {
  'kube-apiserver': ['cluster', 'apiServer', 'image'],
  'kube-controller-manager': ['cluster', 'controllerManager', 'image'],
  'kube-scheduler': ['cluster', 'scheduler', 'image'],
  kubelet: ['machine', 'kubelet', 'image'],
  'kube-proxy': ['cluster', 'proxy', 'image'],
};

/** The Talos 1.14 config document kind of each component (`apiVersion: v1alpha1`, key `image`). */
export const COMPONENT_DOCUMENT_KIND: Record<ImageComponent, string> = {
  'kube-apiserver': 'KubeAPIServerConfig',
  'kube-controller-manager': 'KubeControllerManagerConfig',
  'kube-scheduler': 'KubeSchedulerConfig',
  kubelet: 'KubeletConfig',
  'kube-proxy': 'KubeProxyConfig',
};

export type ConfigRead =
  | { ok: true; images: Partial<Record<ImageComponent, string>>; proxyDisabled: boolean }
  | { ok: false; problem: string };

/** Where one component's image lives: a document and the key path in it, described for messages. */
interface ImagePlace {
  doc: Document;
  path: readonly string[];
  /** e.g. "`image` of the KubeletConfig document", "`machine.kubelet.image` of the v1alpha1 document". */
  where: string;
}

interface ParsedConfig {
  docs: Document[];
  places: Partial<Record<ImageComponent, ImagePlace>>;
  v1alpha1: Document | undefined;
}

const V1ALPHA1 = 'the v1alpha1 document (the one with `version: v1alpha1`)';

function parse(text: string): ParsedConfig | { problem: string } {
  const docs = parseAllDocuments(text);
  if (!Array.isArray(docs) || docs.length === 0) return { problem: 'the machine config is empty' };
  const broken = docs.find((d) => d.errors.length > 0);
  if (broken) return { problem: `the machine config is not valid YAML: ${broken.errors[0]?.message ?? ''}` };
  const v1alpha1 = docs.find((d) => d.get('version') === 'v1alpha1');
  const places: Partial<Record<ImageComponent, ImagePlace>> = {};
  let documents = 0;
  for (const component of Object.keys(PATHS) as ImageComponent[]) {
    const kind = COMPONENT_DOCUMENT_KIND[component];
    const own = docs.filter((d) => d.get('apiVersion') === 'v1alpha1' && d.get('kind') === kind);
    if (own.length > 1)
      return {
        problem: `the machine config has ${own.length} documents with \`apiVersion: v1alpha1\` and \`kind: ${kind}\`; Talos accepts one: merge them into a single ${kind} document`,
      };
    const [doc] = own;
    if (doc) {
      documents++;
      places[component] = { doc, path: ['image'], where: `\`image\` of the ${kind} document` };
    } else if (v1alpha1) {
      places[component] = {
        doc: v1alpha1,
        path: PATHS[component],
        where: `\`${PATHS[component].join('.')}\` of ${V1ALPHA1}`,
      };
    }
  }
  if (!v1alpha1 && documents === 0) {
    return {
      problem: `the machine config has no v1alpha1 document (a document with \`version: v1alpha1\`) and no Kubernetes component document (${Object.values(COMPONENT_DOCUMENT_KIND).join(', ')})`,
    };
  }
  return { docs, places, v1alpha1 };
}

/** The value at a place: a non-empty string, absent, or a problem for a value that is not an image reference. */
function imageAt(place: ImagePlace): string | undefined | { problem: string } {
  const value: unknown = place.doc.getIn(place.path);
  if (value === undefined || value === null || value === '') return undefined;
  if (typeof value !== 'string')
    return {
      problem: `${place.where} is ${JSON.stringify(value)}, not an image reference: set it to an image such as registry.k8s.io/kube-apiserver:v1.35.2, or remove it for Talos's default`,
    };
  return value;
}

/** The component images the config names (absent: Talos's default image for its version). */
export function readConfigImages(text: string): ConfigRead {
  const found = parse(text);
  if ('problem' in found) return { ok: false, problem: found.problem };
  const images: Partial<Record<ImageComponent, string>> = {};
  for (const [component, place] of Object.entries(found.places) as [ImageComponent, ImagePlace][]) {
    const image = imageAt(place);
    if (typeof image === 'object') return { ok: false, problem: image.problem };
    if (image !== undefined) images[component] = image;
  }
  // Only the v1alpha1 `cluster.proxy.disabled`: the reference (talos-api.md §4) names only the
  // `image` key of a KubeProxyConfig document, so no other key of it is read here.
  return { ok: true, images, proxyDisabled: found.v1alpha1?.getIn(['cluster', 'proxy', 'disabled']) === true };
}

/** The config with one component's image set (in its document if the config has one, else at its v1alpha1 path); everything else kept. */
export function withComponentImage(
  text: string,
  component: ImageComponent,
  image: string,
): string | { problem: string } {
  const found = parse(text);
  if ('problem' in found) return found;
  const place = found.places[component];
  if (!place) {
    return {
      problem: `the machine config has neither a ${COMPONENT_DOCUMENT_KIND[component]} document nor ${V1ALPHA1} to set the ${component} image in`,
    };
  }
  const current = imageAt(place);
  if (typeof current === 'object') return current;
  try {
    place.doc.setIn(place.path, image);
  } catch {
    // setIn throws where the path runs through a scalar (`cluster: null`, `proxy: 3`).
    return {
      problem: `${place.where} cannot be set: a key on its path holds a plain value instead of a map; fix the machine config`,
    };
  }
  // The Document API keeps comments, key order, quoting and the other documents; the config's own
  // indentation (talosctl writes 4 spaces) is kept too, so only the changed line differs.
  const indent = indentationOf(text);
  return found.docs.map((d) => d.toString({ lineWidth: 0, indent })).join('');
}

/** The indentation step of the config: the first indented line's, 2 when no line is indented. */
function indentationOf(text: string): number {
  const first = /^( +)\S/m.exec(text);
  return first?.[1]?.length ?? 2;
}
