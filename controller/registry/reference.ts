// Image references, by the grammar of distribution/reference: `host[:port]/path/to/repo[:tag][@digest]`.
// The registry host must be written out: installer images are always fully qualified, and guessing
// Docker Hub for `siderolabs/installer:v1.13.2` would check the wrong registry.

export interface ImageReference {
  /** Registry host as written, lowercased, with its port: `ghcr.io`, `127.0.0.1:5000`, `[::1]:5000`. */
  readonly host: string;
  /** `siderolabs/installer`, `metal-installer/<schematic>`. */
  readonly repository: string;
  readonly tag: string | undefined;
  readonly digest: string | undefined;
  /** What goes after `/manifests/`: the digest when there is one (it pins the content), else the tag. */
  readonly reference: string;
}

const DOMAIN_COMPONENT = '(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])';
const HOST_RE = new RegExp(`^(?:${DOMAIN_COMPONENT}(?:\\.${DOMAIN_COMPONENT})*|\\[[a-fA-F0-9:]+\\])(?::[0-9]{1,5})?$`);
const PATH_COMPONENT_RE = /^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$/;
const TAG_RE = /^[\w][\w.-]{0,127}$/;
const DIGEST_RE = /^[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}$/;
const DIGEST_LENGTHS: Readonly<Record<string, number>> = { sha256: 64, sha384: 96, sha512: 128 };
const MAX_NAME_LENGTH = 255;

/** Whether `text` is a registry host with an optional port (`ghcr.io`, `127.0.0.1:5000`, `[::1]:5000`). */
export function isRegistryHost(text: string): boolean {
  if (!HOST_RE.test(text)) return false;
  const port = /:([0-9]+)$/.exec(text.replace(/^\[[^\]]*\]/, ''))?.[1];
  return port === undefined || (Number(port) >= 1 && Number(port) <= 65535);
}

function checkDigest(digest: string): string | undefined {
  if (!DIGEST_RE.test(digest)) return `digest "${digest}" is not ALGORITHM:HEX (e.g. sha256:<64 hex digits>)`;
  const [algorithm = '', hex = ''] = digest.split(':');
  const want = DIGEST_LENGTHS[algorithm];
  if (want !== undefined && hex.length !== want)
    return `digest "${digest}": ${algorithm} takes ${want} hex digits, not ${hex.length}`;
  if (/[A-F]/.test(hex)) return `digest "${digest}": hex digits must be lowercase`;
  return undefined;
}

/** `host/rest` → host and rest, by Docker's rule: a host has a dot, a port, or is `localhost`. */
function splitHost(name: string): { host: string; rest: string } | Error {
  const slash = name.indexOf('/');
  if (slash < 0) return new Error('no registry host: write it out, e.g. ghcr.io/siderolabs/installer:v1.13.2');
  const host = name.slice(0, slash);
  if (!/[.:]/.test(host) && host !== 'localhost' && !/[A-Z]/.test(host)) {
    return new Error(`no registry host ("${host}" is not a host name): write it out, e.g. ghcr.io/${name}`);
  }
  if (!isRegistryHost(host)) return new Error(`"${host}" is not a registry host[:port]`);
  return { host: host.toLowerCase(), rest: name.slice(slash + 1) };
}

function checkRepository(repository: string): string | undefined {
  if (repository === '') return 'no repository after the registry host';
  for (const component of repository.split('/')) {
    if (!PATH_COMPONENT_RE.test(component)) {
      return `repository "${repository}": component "${component}" must be lowercase letters and digits separated by . _ __ or -`;
    }
  }
  return undefined;
}

/** Docker Hub's two spellings are one registry, and its official images live under `library/`. */
function dockerHub(host: string, repository: string): { host: string; repository: string } {
  if (host !== 'index.docker.io' && host !== 'docker.io') return { host, repository };
  return { host: 'docker.io', repository: repository.includes('/') ? repository : `library/${repository}` };
}

/** `name@digest` → the name and the checked digest (undefined without one). */
function splitDigest(text: string): { name: string; digest: string | undefined } | Error {
  const [name = '', digest, ...extra] = text.split('@');
  if (extra.length > 0) return new Error('more than one @digest');
  const badDigest = digest === undefined ? undefined : checkDigest(digest);
  if (badDigest) return new Error(badDigest);
  return { name, digest };
}

/** `repository:tag` → the repository and the checked tag; without a tag, a digest must pin the image. */
function splitTag(name: string, digest: string | undefined): { repository: string; tag: string | undefined } | Error {
  const colon = name.lastIndexOf(':');
  if (colon >= 0) {
    const tag = name.slice(colon + 1);
    if (!TAG_RE.test(tag))
      return new Error(`tag "${tag}" is not valid (letters, digits, _ . -, at most 128, not starting with . or -)`);
    return { repository: name.slice(0, colon), tag };
  }
  if (digest === undefined) return new Error('no tag or digest: name the version, e.g. :v1.13.2');
  return { repository: name, tag: undefined };
}

/** Parses an image reference; an Error says what is wrong with it. */
export function parseImageReference(text: string): ImageReference | Error {
  if (text === '') return new Error('empty image reference');
  if (/\s/.test(text)) return new Error('image reference contains whitespace');

  const digested = splitDigest(text);
  if (digested instanceof Error) return digested;
  const { name, digest } = digested;

  const split = splitHost(name);
  if (split instanceof Error) return split;

  const tagged = splitTag(split.rest, digest);
  if (tagged instanceof Error) return tagged;
  const { tag } = tagged;

  const badRepository = checkRepository(tagged.repository);
  if (badRepository) return new Error(badRepository);
  const { host, repository } = dockerHub(split.host, tagged.repository);
  if (host.length + 1 + repository.length > MAX_NAME_LENGTH)
    return new Error(`image name is longer than ${MAX_NAME_LENGTH} characters`);
  return { host, repository, tag, digest, reference: digest ?? tag ?? '' };
}
