// Talos machine stages in which a node is busy with an upgrade or reboot (we may have asked for it).
const BUSY_STAGES = new Set(['upgrading', 'rebooting', 'shutting down', 'booting']);

export function isBusyStage(stage: string | undefined): boolean {
  return stage !== undefined && BUSY_STAGES.has(stage);
}
