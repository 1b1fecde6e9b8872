// `--scenario auto-update`: an auto-update template (examples/auto-update.yaml) is pushed; Talos
// publishes a patch release upstream (the lab forge's siderolabs/talos releases feed, its installer
// images in the lab registry); the controller proposes it as a pull request, the user merges it,
// and the child plan the merge adds to Git rolls out. The demo only plays upstream and the user.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseDocument } from 'yaml';
import { DEMO_TALOS_VERSION, publishInstallers } from '../lab/demo-fleet.js';
import { autoUpdateTemplate, TALOS_TARGET } from './plan-files.js';
import { findProposalPr, mergePr } from './plans-repo.js';
import type { Scenario, StoryContext } from './scenarios.js';

const TEMPLATE = 'production';
/** The patch release after the fleet's DEMO_TALOS_VERSION (v1.12.4). */
const RELEASE = 'v1.12.5';
/** The label the controller puts on a child plan (docs/auto-update-and-promotion.md, Auto-update). */
const TEMPLATE_LABEL = 'kangalpatch.ozalp.dk/auto-update-template';
/** Any new value on a template checks its releases now (docs/gitops.md, Plans from Git). */
const RECONCILE_NOW = 'kangalpatch.ozalp.dk/reconcile-now';
const DAY = 86_400_000;

/** Upstream before the story: the fleet's release and the next minor, both out for a while. */
async function releasesFeed(ctx: StoryContext): Promise<void> {
  await ctx.lab.forge.createRepo('siderolabs', 'talos', {
    files: { 'README.md': "Talos Linux (the demo's releases feed)\n" },
  });
  for (const [tag, ageMs] of [
    [DEMO_TALOS_VERSION, 30 * DAY],
    [TALOS_TARGET, 10 * DAY],
  ] as const) {
    ctx.lab.forge.addRelease('siderolabs', 'talos', tag, {
      publishedAt: new Date(Date.now() - ageMs).toISOString(),
      body: `Talos ${tag}`,
    });
  }
  ctx.say(
    `releases feed: siderolabs/talos in the lab forge lists ${DEMO_TALOS_VERSION} and ${TALOS_TARGET} (the controller reads it through --releases-api-url)`,
  );
}

/** The child plan the merge added to Git, read from the user's pulled clone. */
async function childPlanOf(ctx: StoryContext, before: string): Promise<string> {
  const added = (await ctx.plans.clone.git(['diff', '--name-only', '--diff-filter=A', before, 'HEAD']))
    .split('\n')
    .filter((f) => f.endsWith('.yaml'));
  const [file] = added;
  if (!file || added.length > 1)
    throw new Error(
      `the merged proposal should add one plan file; it added ${added.length ? added.join(', ') : 'none'}`,
    );
  const doc = parseDocument(await readFile(join(ctx.plans.clone.dir, file), 'utf8'));
  const name: unknown = doc.getIn(['metadata', 'name']);
  const label: unknown = doc.getIn(['metadata', 'labels', TEMPLATE_LABEL]);
  const version: unknown = doc.getIn(['spec', 'target', 'talosVersion']);
  if (typeof name !== 'string' || label !== TEMPLATE)
    throw new Error(
      `${file}: not a child plan of ${TEMPLATE} (metadata.name ${String(name)}, label ${TEMPLATE_LABEL}: ${String(label)})`,
    );
  ctx.say(
    `the merge added ${file}: PatchPlan ${name} (label ${TEMPLATE_LABEL}: ${label}), Talos ${String(version)}; the GitOps loop applies it at its next poll`,
  );
  return name;
}

async function prelude(ctx: StoryContext): Promise<string> {
  const first = await ctx.showPlan(
    TEMPLATE,
    (p) => (p.phase === 'Watching' && p.autoUpdate?.lastCheckTime ? p.autoUpdate : undefined),
    {
      timeoutMs: 120_000,
      description: `template ${TEMPLATE} Watching after its first release check`,
    },
  );
  ctx.say(
    `first check: the nodes run ${first.currentVersion ?? '?'}, the newest release is ${first.latestVersion ?? '?'}: a minor step, and the template allows patch releases only, so nothing to propose`,
  );

  await publishInstallers(ctx.lab.registry, [RELEASE]);
  ctx.lab.forge.addRelease('siderolabs', 'talos', RELEASE, { body: `Talos ${RELEASE}: a patch release` });
  ctx.say(
    `upstream releases Talos ${RELEASE} (in the feed now, its installer images in the lab registry); the template's next check is at ${first.nextCheckTime ?? '?'} (checkInterval 1m)`,
  );
  ctx.say(
    'the user does not wait for it: a new value of the reconcile-now annotation makes the template check its releases at once',
  );
  await ctx.kubectl(['annotate', '--overwrite', 'patchplan', TEMPLATE, `${RECONCILE_NOW}=${new Date().toISOString()}`]);
  await ctx.showPlan(TEMPLATE, (p) => (p.autoUpdate?.lastProposedVersion === RELEASE ? true : undefined), {
    timeoutMs: 180_000,
    description: `a proposal of ${RELEASE} in ${TEMPLATE}'s status`,
  });
  const pr = await findProposalPr(ctx.lab.forge, ctx.cluster, TEMPLATE, RELEASE);
  if (!pr)
    throw new Error(
      `the status of ${TEMPLATE} names a proposal of ${RELEASE}, but the forge has no pull request from kangal-patch/${ctx.cluster}/auto-update/${TEMPLATE}-${RELEASE}`,
    );
  ctx.say(`proposal PR: ${pr.url} "${pr.title}" (labels: ${pr.labels.join(', ')})`);

  ctx.say(`the user reviews it and merges it (the Merge button: PUT /repos/acme/plans/pulls/${pr.number}/merge)`);
  const sha = await mergePr(ctx.lab.forge, pr.number);
  ctx.say(`merged as ${sha.slice(0, 12)}`);
  const before = (await ctx.plans.clone.git(['rev-parse', 'HEAD'])).trim();
  ctx.say('$ git pull --ff-only');
  await ctx.plans.clone.git(['pull', '--quiet', '--ff-only', 'origin', 'main']);
  return childPlanOf(ctx, before);
}

export function autoUpdateScenario(): Scenario {
  return {
    name: 'auto-update',
    story: `examples/auto-update.yaml on the production nodes (allow: patch): upstream releases Talos ${RELEASE}, the controller proposes it as a pull request, the demo merges it, the child plan rolls out`,
    plan: TEMPLATE,
    file: (place) => ({ path: `plans/${TEMPLATE}.yaml`, content: autoUpdateTemplate(place, TEMPLATE) }),
    pushMessage: `Follow Talos patch releases on the ${TEMPLATE} nodes`,
    releasesFeed: true,
    arrange: releasesFeed,
    prelude,
    finished: (plan) => ['Completed', 'Failed', 'Cancelled'].includes(plan.phase ?? ''),
  };
}
