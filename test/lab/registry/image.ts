// A minimal valid OCI image (one config blob, one gzip'd tar layer, a manifest), built in memory.
import { createHash } from 'node:crypto';
import { gzipSync } from 'node:zlib';

export const OCI_MANIFEST = 'application/vnd.oci.image.manifest.v1+json';
const OCI_CONFIG = 'application/vnd.oci.image.config.v1+json';
const OCI_LAYER = 'application/vnd.oci.image.layer.v1.tar+gzip';
export const DOCKER_MANIFEST = 'application/vnd.docker.distribution.manifest.v2+json';

export interface Blob {
  mediaType: string;
  digest: string;
  size: number;
  data: Buffer;
}

export interface OciImage {
  config: Blob;
  layers: Blob[];
  manifest: Buffer;
  manifestDigest: string;
}

function sha256(data: Buffer): string {
  return `sha256:${createHash('sha256').update(data).digest('hex')}`;
}

function blob(mediaType: string, data: Buffer): Blob {
  return { mediaType, digest: sha256(data), size: data.length, data };
}

/** A ustar archive holding regular files (path → content), mtime 0 for reproducible digests. */
function tar(files: Record<string, string | Buffer>): Buffer {
  const parts: Buffer[] = [];
  for (const [path, content] of Object.entries(files)) {
    const data = typeof content === 'string' ? Buffer.from(content) : content;
    const header = Buffer.alloc(512);
    header.write(path, 0, 100, 'utf8');
    header.write('0000644\0', 100, 'ascii');
    header.write('0000000\0', 108, 'ascii');
    header.write('0000000\0', 116, 'ascii');
    header.write(`${data.length.toString(8).padStart(11, '0')}\0`, 124, 'ascii');
    header.write('00000000000\0', 136, 'ascii');
    header.write('        ', 148, 'ascii');
    header.write('0', 156, 'ascii');
    header.write('ustar\0', 257, 'ascii');
    header.write('00', 263, 'ascii');
    let sum = 0;
    for (const byte of header) sum += byte;
    header.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148, 'ascii');
    parts.push(header, data, Buffer.alloc((512 - (data.length % 512)) % 512));
  }
  parts.push(Buffer.alloc(1024));
  return Buffer.concat(parts);
}

/** An image whose single layer names its repository and tag, so each published tag has its own digest. */
export function buildImage(repository: string, tag: string): OciImage {
  const layerTar = tar({ 'etc/kangal-lab-image': `${repository}:${tag}\n` });
  const layer = blob(OCI_LAYER, gzipSync(layerTar, { level: 9 }));
  const config = blob(
    OCI_CONFIG,
    Buffer.from(
      JSON.stringify({
        architecture: 'amd64',
        os: 'linux',
        created: '1970-01-01T00:00:00Z',
        config: { Labels: { 'org.opencontainers.image.ref.name': tag } },
        rootfs: { type: 'layers', diff_ids: [sha256(layerTar)] },
        history: [{ created: '1970-01-01T00:00:00Z', created_by: 'kangal-patch lab' }],
      }),
    ),
  );
  const manifest = Buffer.from(
    JSON.stringify({
      schemaVersion: 2,
      mediaType: OCI_MANIFEST,
      config: { mediaType: config.mediaType, digest: config.digest, size: config.size },
      layers: [{ mediaType: layer.mediaType, digest: layer.digest, size: layer.size }],
      annotations: { 'org.opencontainers.image.ref.name': tag },
    }),
  );
  return { config, layers: [layer], manifest, manifestDigest: sha256(manifest) };
}
