// Public surface of controller/kube.
export { createKube, createKubeFromConfig, type Kube } from './adapter.js';
export { loadKubeConfig } from './config.js';
export type { KubeInformer } from './informer.js';
export type * from './port.js';
export * from './views.js';
export { resourceName, type DynamicResource, type ObjectSource, type ObjectView } from './dynamic.js';
