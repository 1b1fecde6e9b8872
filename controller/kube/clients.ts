// The client-node API objects the adapter uses, made once from one KubeConfig.
import {
  AppsV1Api,
  BatchV1Api,
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  EventsV1Api,
  PolicyV1Api,
  type KubeConfig,
} from '@kubernetes/client-node';

export interface KubeClients {
  kubeConfig: KubeConfig;
  core: CoreV1Api;
  apps: AppsV1Api;
  batch: BatchV1Api;
  coordination: CoordinationV1Api;
  policy: PolicyV1Api;
  custom: CustomObjectsApi;
  events: EventsV1Api;
}

export function makeClients(kubeConfig: KubeConfig): KubeClients {
  return {
    kubeConfig,
    core: kubeConfig.makeApiClient(CoreV1Api),
    apps: kubeConfig.makeApiClient(AppsV1Api),
    batch: kubeConfig.makeApiClient(BatchV1Api),
    coordination: kubeConfig.makeApiClient(CoordinationV1Api),
    policy: kubeConfig.makeApiClient(PolicyV1Api),
    custom: kubeConfig.makeApiClient(CustomObjectsApi),
    events: kubeConfig.makeApiClient(EventsV1Api),
  };
}

/** fieldManager of everything the controller writes (the GitOps sync uses its own). */
export const FIELD_MANAGER = 'kangalpatch-controller';
