// Test fixture: starts a forge (with one repository) and a registry, prints where their process
// and temp dirs are as one JSON line, then waits to be killed. The cleanup test SIGKILLs it.
import { startForge } from '../forge/index.js';
import { startRegistry } from './index.js';

const forge = await startForge();
const { bareDir } = await forge.createRepo('acme', 'fleet', { files: { 'a.txt': 'a\n' } });
const registry = await startRegistry({ tokenAuth: true });
console.log(JSON.stringify({ registryPid: registry.pid, registryStorage: registry.storageDir, forgeRepo: bareDir }));
setInterval(() => undefined, 60_000);
