// OCI distribution client: does an installer image exist in its registry (or its mirror)?
export { createRegistryClient, type RegistryClient, type RegistryClientOptions } from './client.js';
export { parseMirrorFlag, type RegistryMirrors } from './mirrors.js';
export { parseImageReference } from './reference.js';
