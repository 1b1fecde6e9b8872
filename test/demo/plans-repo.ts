// The plans repository a user would have: created in the lab forge, its token in a file only its
// owner reads, and a git-CLI clone (the token travels in a header, never in the URL).
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Forge } from '../lab/forge/index.js';
import { cloneWorkingCopy, type WorkingCopy } from '../lab/forge/working-copy.js';

export const PLANS_OWNER = 'acme';
export const PLANS_NAME = 'plans';

export interface PlansRepo {
  cloneUrl: string;
  tokenFile: string;
  clone: WorkingCopy;
}

const README = `# Plans repository

PatchPlan files under plans/ are applied by kangal-patch; a file removed here is removed from the cluster.
`;

export async function createPlansRepo(forge: Forge, dir: string): Promise<PlansRepo> {
  const { cloneUrl } = await forge.createRepo(PLANS_OWNER, PLANS_NAME, { files: { 'README.md': README, 'plans/.gitkeep': '' } });
  const tokenFile = join(dir, 'git-token');
  writeFileSync(tokenFile, `${forge.token}\n`, { mode: 0o600 });
  const clone = await cloneWorkingCopy({ cloneUrl, token: forge.token, dir: join(dir, 'plans') });
  await clone.git(['config', 'user.name', 'Demo User']);
  await clone.git(['config', 'user.email', 'demo@example.invalid']);
  return { cloneUrl, tokenFile, clone };
}

/** The report pull request of `plan` (branch kangal-patch/<cluster>/report/<plan>), if the controller opened one. */
export async function findReportPr(forge: Forge, cluster: string, plan: string): Promise<string | undefined> {
  // One branch per rollout: kangal-patch/<cluster>/report/<plan>-<rollout id>.
  const prefix = `kangal-patch/${cluster}/report/${plan}-`;
  const res = await fetch(`${forge.apiUrl}/repos/${PLANS_OWNER}/${PLANS_NAME}/pulls?state=all`, {
    headers: { authorization: `token ${forge.token}`, accept: 'application/vnd.github+json' },
  });
  if (!res.ok) throw new Error(`listing pull requests: HTTP ${res.status}`);
  const pulls = (await res.json()) as { html_url?: string; head?: { ref?: string } }[];
  return pulls.find((p) => p.head?.ref?.startsWith(prefix) === true)?.html_url;
}
