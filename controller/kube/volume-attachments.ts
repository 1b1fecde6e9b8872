// storage.k8s.io/v1 VolumeAttachments, read only: the informer's projection and a live read of the
// ones naming a node, which a drain's VolumeDetachTimeout verdict rests on (not the cache).
import type { V1VolumeAttachment } from '@kubernetes/client-node';
import type { OpContext } from '../runtime/context.js';
import { kubeCall } from './call.js';
import type { KubeClients } from './clients.js';
import type { VolumeAttachmentView } from './views.js';

export function projectVolumeAttachment(v: V1VolumeAttachment): VolumeAttachmentView {
  return {
    name: v.metadata?.name ?? '',
    resourceVersion: v.metadata?.resourceVersion ?? '',
    nodeName: v.spec.nodeName,
    persistentVolume: v.spec.source.persistentVolumeName,
  };
}

/** Names of the VolumeAttachments naming `nodeName`, listed live (the API has no field selector on spec.nodeName). */
export async function listVolumeAttachmentsOf(c: KubeClients, ctx: OpContext, nodeName: string): Promise<string[]> {
  const list = await kubeCall(ctx, 'list volumeattachments', (o) => c.storage.listVolumeAttachment({}, o));
  return list.items
    .map(projectVolumeAttachment)
    .filter((v) => v.nodeName === nodeName)
    .map((v) => v.name);
}
