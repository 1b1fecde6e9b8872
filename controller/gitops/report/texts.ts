// The names and texts of a rollout report's bot branch and pull request.

export const reportBranch = (cluster: string, plan: string, rollout: string): string =>
  `kangal-patch/${cluster}/report/${plan}-${rollout}`;

export function reportTitle(cluster: string, plan: string): string {
  return `KangalPatch [${cluster}]: rollout report of ${plan}`;
}

interface ReportBodyInput {
  cluster: string;
  plan: string;
  rollout: string;
  /** The branch the report PR merges into. */
  base: string;
  paths: { markdownPath: string; yamlPath: string };
}

export function reportBody({ cluster, plan, rollout, base, paths }: ReportBodyInput): string {
  return [
    `Rollout report of PatchPlan \`${plan}\` on cluster \`${cluster}\` (rollout ${rollout}).`,
    '',
    `KangalPatch updates \`${paths.markdownPath}\` and its machine-readable twin \`${paths.yamlPath}\` as the rollout progresses,`,
    'and marks this pull request ready for review when the plan finishes (a draft again if the plan runs again).',
    `Merge it to archive the report on \`${base}\`. Commits you add to this branch are kept; if you edit the report files, KangalPatch stops updating this pull request.`,
  ].join('\n');
}
