// Machine-readable reasons of PatchJob status (CamelCase), one per outcome people act on.
import type { CallFailure } from './types.js';
export const JobReason = {
  AlreadyAtTarget: 'AlreadyAtTarget',
  Upgraded: 'Upgraded',
  NodeNotFound: 'NodeNotFound',
  InvalidSpec: 'InvalidSpec',
  DowngradeRefused: 'DowngradeRefused',
  RebootModeUnsupported: 'RebootModeUnsupported',
  InvalidNodeOverride: 'InvalidNodeOverride',
  RollingBack: 'RollingBack',
  RollbackRequested: 'RollbackRequested',
  RolledBack: 'RolledBack',
  RollbackFailed: 'RollbackFailed',
  WaitingForVolumeDetach: 'WaitingForVolumeDetach',
  VolumeDetachTimeout: 'VolumeDetachTimeout',
  ReadingNode: 'ReadingNode',
  /** A deadline passed on what the caches show: the node (or its pods) is read from the apiserver before the verdict. */
  ConfirmingNode: 'ConfirmingNode',
  PullingInstaller: 'PullingInstaller',
  TalosUnreachable: 'TalosUnreachable',
  /** The node answers, but with something this controller cannot read (a field missing, an unknown enum value): retried until the deadline. */
  TalosAnswerUnreadable: 'TalosAnswerUnreadable',
  TalosCallFailed: 'TalosCallFailed',
  PullFailed: 'PullFailed',
  Cordoned: 'Cordoned',
  Evicting: 'Evicting',
  DrainBlockedByPDB: 'DrainBlockedByPDB',
  WaitingForPodsToTerminate: 'WaitingForPodsToTerminate',
  UnmanagedPods: 'UnmanagedPods',
  DrainTimeout: 'DrainTimeout',
  UpgradeRequested: 'UpgradeRequested',
  UpgradeFailed: 'UpgradeFailed',
  InstallFailed: 'InstallFailed',
  UpgradeTimeout: 'UpgradeTimeout',
  RebootRequested: 'RebootRequested',
  WaitingForReboot: 'WaitingForReboot',
  BootedOldPartition: 'BootedOldPartition',
  RebootTimeout: 'RebootTimeout',
  NodeLeftCordoned: 'NodeLeftCordoned',
  ReadingMachineConfig: 'ReadingMachineConfig',
  PullingImages: 'PullingImages',
  ImagePullFailed: 'ImagePullFailed',
  ConfigUnreadable: 'ConfigUnreadable',
  ApplyingConfig: 'ApplyingConfig',
  ApplyConfigRejected: 'ApplyConfigRejected',
  WaitingForStaticPod: 'WaitingForStaticPod',
  StaticPodNotReady: 'StaticPodNotReady',
  WaitingForControlPlane: 'WaitingForControlPlane',
  ControlPlaneNotUpgraded: 'ControlPlaneNotUpgraded',
  WaitingForSlot: 'WaitingForSlot',
  WaitingForKubelet: 'WaitingForKubelet',
  KubernetesUpgradeTimeout: 'KubernetesUpgradeTimeout',
  /** The etcd gate holds a control-plane node (before it goes down, or until its member caught up). */
  WaitingForEtcd: 'WaitingForEtcd',
  /** Another control-plane node has the turn (or, for the etcd leader's node, others still wait for theirs). */
  WaitingForEtcdTurn: 'WaitingForEtcdTurn',
  /** The node's etcd member leads: leadership is handed over before the node goes down. */
  EtcdLeaderForfeit: 'EtcdLeaderForfeit',
  /** spec.etcd.timeout passed with the gate still closed. */
  EtcdTimeout: 'EtcdTimeout',
  /** Two etcd members: either down loses quorum (Talos refuses it too). */
  EtcdQuorumAtRisk: 'EtcdQuorumAtRisk',
} as const;
export type JobReason = (typeof JobReason)[keyof typeof JobReason];

/**
 * Why a Talos call that keeps failing transiently holds the job: the node does not answer, or it
 * answers with something this controller cannot read (TalosErrorKind.Malformed: a newer Talos?
 * something between us and it?), which needs a different look than the network.
 */
export function talosWaitReason(failure: Pick<CallFailure, 'reason'>): JobReason {
  return failure.reason === 'Malformed' ? JobReason.TalosAnswerUnreadable : JobReason.TalosUnreachable;
}
