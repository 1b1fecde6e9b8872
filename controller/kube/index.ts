// Public surface of controller/kube.
export { createKube, createKubeFromConfig, type CreateKubeOptions, type Kube } from './adapter.js';
export { loadKubeConfig, KubeConfigError } from './config.js';
export type { KubeInformer, InformerStats } from './informer.js';
export type * from './port.js';
export * from './views.js';
export { resourceName, type DynamicResource, type ObjectSource, type ObjectView } from './dynamic.js';
