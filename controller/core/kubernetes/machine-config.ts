// Reading and changing the image references of a Talos machine config. The config is the node's
// full, multi-document YAML; only the v1alpha1 document (the one with `version: v1alpha1`) is
// changed, through the yaml Document API so everything else (comments, order, other documents)
// is kept byte for byte where possible.
import { parseAllDocuments, type Document } from 'yaml';
import type { ImageComponent } from './images.js';

const PATHS: Record<ImageComponent, readonly string[]> = {
  'kube-apiserver': ['cluster', 'apiServer', 'image'],
  'kube-controller-manager': ['cluster', 'controllerManager', 'image'],
  'kube-scheduler': ['cluster', 'scheduler', 'image'],
  kubelet: ['machine', 'kubelet', 'image'],
  'kube-proxy': ['cluster', 'proxy', 'image'],
};

export type ConfigRead = { ok: true; images: Partial<Record<ImageComponent, string>>; proxyDisabled: boolean } | { ok: false; problem: string };

function v1alpha1(text: string): { docs: Document[]; doc: Document } | { problem: string } {
  const docs = parseAllDocuments(text);
  if (!Array.isArray(docs)) return { problem: 'the machine config is empty' };
  const broken = docs.find((d) => d.errors.length > 0);
  if (broken) return { problem: `the machine config is not valid YAML: ${broken.errors[0]?.message ?? ''}` };
  const doc = docs.find((d) => d.get('version') === 'v1alpha1');
  if (!doc) return { problem: 'the machine config has no v1alpha1 document (a document with `version: v1alpha1`)' };
  return { docs, doc };
}

/** The component images the config names (absent: Talos's default image for its version). */
export function readConfigImages(text: string): ConfigRead {
  const found = v1alpha1(text);
  if ('problem' in found) return { ok: false, problem: found.problem };
  const images: Partial<Record<ImageComponent, string>> = {};
  for (const [component, path] of Object.entries(PATHS) as [ImageComponent, readonly string[]][]) {
    const value = found.doc.getIn(path);
    if (typeof value === 'string' && value !== '') images[component] = value;
  }
  return { ok: true, images, proxyDisabled: found.doc.getIn(['cluster', 'proxy', 'disabled']) === true };
}

/** The config with one component's image set; everything else kept. */
export function withComponentImage(text: string, component: ImageComponent, image: string): string | { problem: string } {
  const found = v1alpha1(text);
  if ('problem' in found) return found;
  found.doc.setIn(PATHS[component], image);
  return found.docs.map((d) => d.toString({ lineWidth: 0 })).join('');
}
