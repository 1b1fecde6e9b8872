// Image references of the Kubernetes components, as `talosctl upgrade-k8s` rewrites them: the
// registry and repository the config already uses are kept (a cluster that mirrors registry.k8s.io
// keeps its mirror), the tag becomes the target version, and the kubelet keeps its variant suffix.
import semver from 'semver';
import { KubernetesComponent } from '../../../schemas/patchjob.js';

export type ImageComponent = KubernetesComponent | 'kube-proxy';

/** The control-plane static pods, in the order a control-plane node moves them. */
export const STATIC_POD_COMPONENTS: readonly KubernetesComponent[] = [
  KubernetesComponent.APIServer,
  KubernetesComponent.ControllerManager,
  KubernetesComponent.Scheduler,
];

/** Repositories Talos uses when the machine config names no image. */
const DEFAULT_REPOSITORY: Record<ImageComponent, string> = {
  'kube-apiserver': 'registry.k8s.io/kube-apiserver',
  'kube-controller-manager': 'registry.k8s.io/kube-controller-manager',
  'kube-scheduler': 'registry.k8s.io/kube-scheduler',
  kubelet: 'ghcr.io/siderolabs/kubelet',
  'kube-proxy': 'registry.k8s.io/kube-proxy',
};

const VARIANT = /-(fat|slim)$/;

interface ImageRef {
  repository: string;
  tag: string | undefined;
}

function parseImage(image: string): ImageRef {
  const withoutDigest = image.split('@')[0] ?? image;
  const slash = withoutDigest.lastIndexOf('/');
  const colon = withoutDigest.lastIndexOf(':');
  // A colon before the last slash is a registry port, not a tag.
  if (colon > slash) return { repository: withoutDigest.slice(0, colon), tag: withoutDigest.slice(colon + 1) };
  return { repository: withoutDigest, tag: undefined };
}

/** The image `component` runs at `version` (vX.Y.Z), keeping the repository of `current`. */
export function targetImage(component: ImageComponent, current: string | undefined, version: string): string {
  const ref = current ? parseImage(current) : { repository: DEFAULT_REPOSITORY[component], tag: undefined };
  const variant = component === 'kubelet' ? (ref.tag?.match(VARIANT)?.[0] ?? '') : '';
  return `${ref.repository}:${version}${variant}`;
}

/** The Kubernetes version an image reference runs (`v1.35.2` for `...:v1.35.2-fat`), undefined when its tag is no version. */
export function imageVersion(image: string | undefined): string | undefined {
  const tag = image ? parseImage(image).tag?.replace(VARIANT, '') : undefined;
  return tag !== undefined && /^v\d+\.\d+\.\d+/.test(tag) && semver.valid(tag) ? tag : undefined;
}
