// OCI distribution client: does an installer image exist in its registry (or its mirror)?
export {
  createRegistryClient,
  type ImageCheck,
  type RegistryClient,
  type RegistryClientOptions,
  type TagList,
} from './client.js';
export { parseMirrorFlag, type RegistryMirrors } from './mirrors.js';
export { parseImageReference, type ImageReference } from './reference.js';
