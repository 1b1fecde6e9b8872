// The plans repository a user would have: created in the lab forge, its token in a file only its
// owner reads, and a git-CLI clone (the token travels in a header, never in the URL).
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Forge } from '../lab/forge/index.js';
import { cloneWorkingCopy, type WorkingCopy } from '../lab/forge/working-copy.js';
import { forgeUserCall } from '../lab/forge/user-api.js';

const PLANS_OWNER = 'acme';
const PLANS_NAME = 'plans';

export interface PlansRepo {
  cloneUrl: string;
  tokenFile: string;
  clone: WorkingCopy;
}

const README = `# Plans repository

PatchPlan files under plans/ are applied by kangal-patch; a file removed here is removed from the cluster.
`;

export async function createPlansRepo(forge: Forge, dir: string): Promise<PlansRepo> {
  const { cloneUrl } = await forge.createRepo(PLANS_OWNER, PLANS_NAME, {
    files: { 'README.md': README, 'plans/.gitkeep': '' },
  });
  const tokenFile = join(dir, 'git-token');
  writeFileSync(tokenFile, `${forge.token}\n`, { mode: 0o600 });
  const clone = await cloneWorkingCopy({ cloneUrl, token: forge.token, dir: join(dir, 'plans') });
  await clone.git(['config', 'user.name', 'Demo User']);
  await clone.git(['config', 'user.email', 'demo@example.invalid']);
  return { cloneUrl, tokenFile, clone };
}

interface Pull {
  number: number;
  title: string;
  html_url: string;
  state: string;
  draft?: boolean;
  body?: string | null;
  labels?: { name: string }[];
  head?: { ref?: string };
}

/** A call to the lab forge's GitHub-compatible API, as the user's token. */
function forgeApi<T>(forge: Forge, path: string, init: { method?: string; body?: unknown } = {}): Promise<T> {
  return forgeUserCall<T>(forge, `/repos/${PLANS_OWNER}/${PLANS_NAME}${path}`, init);
}

const pulls = (forge: Forge): Promise<Pull[]> => forgeApi<Pull[]>(forge, '/pulls?state=all&per_page=100');

/** The report pull request of `plan` (branch kangal-patch/<cluster>/report/<plan>), if the controller opened one. */
export async function findReportPr(forge: Forge, cluster: string, plan: string): Promise<string | undefined> {
  // One branch per rollout: kangal-patch/<cluster>/report/<plan>-<rollout id>.
  const prefix = `kangal-patch/${cluster}/report/${plan}-`;
  return (await pulls(forge)).find((p) => p.head?.ref?.startsWith(prefix) === true)?.html_url;
}

/** The report pull request of `plan` once it is ready for review (the controller marks it so when the rollout ended). */
export async function readyReportPr(
  forge: Forge,
  cluster: string,
  plan: string,
): Promise<{ number: number; url: string } | undefined> {
  const prefix = `kangal-patch/${cluster}/report/${plan}-`;
  const p = (await pulls(forge)).find(
    (x) => x.head?.ref?.startsWith(prefix) === true && x.state === 'open' && x.draft !== true,
  );
  return p && { number: p.number, url: p.html_url };
}

export interface ProposalPr {
  number: number;
  url: string;
  title: string;
  state: string;
  labels: string[];
  body: string;
}

/** The auto-update proposal of `template` for `version` (branch kangal-patch/<cluster>/auto-update/<template>-<version>), if opened. */
export async function findProposalPr(
  forge: Forge,
  cluster: string,
  template: string,
  version: string,
): Promise<ProposalPr | undefined> {
  const branch = `kangal-patch/${cluster}/auto-update/${template}-${version}`;
  const p = (await pulls(forge)).find((x) => x.head?.ref === branch);
  return (
    p && {
      number: p.number,
      url: p.html_url,
      title: p.title,
      state: p.state,
      labels: (p.labels ?? []).map((l) => l.name),
      body: p.body ?? '',
    }
  );
}

/** What the Merge button does: `PUT /repos/{owner}/{repo}/pulls/{number}/merge`. */
export async function mergePr(forge: Forge, number: number): Promise<string> {
  const merged = await forgeApi<{ sha: string }>(forge, `/pulls/${number}/merge`, {
    method: 'PUT',
    body: { merge_method: 'merge' },
  });
  return merged.sha;
}
