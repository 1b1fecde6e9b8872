// The secrets scan: everything the controller produced that a person or another system can read —
// its log lines, the Events, the PatchPlan and PatchJob objects, the pull requests, the commits of
// its branches and every request it sent the forge — searched for a credential, in the forms it
// could leak in (the git token raw and as the Basic header git sends; the Talos client key as
// stored in the Secret and as PEM).
import { CustomObjectsApi, EventsV1Api } from '@kubernetes/client-node';
import type { Controller, JobLab } from './job-lab.js';

export interface Haystack {
  what: string;
  text: string;
}

/** The forms of the lab's credentials that must never appear: the forge token, its Basic form, the Talos key (base64 and PEM body). */
export function labSecrets(lab: JobLab): string[] {
  const secrets: string[] = [];
  if (lab.forge) secrets.push(lab.forge.token, Buffer.from(`x-access-token:${lab.forge.token}`).toString('base64'));
  const key = lab.talos.secretData['tls.key'];
  const pemBody = Buffer.from(key, 'base64')
    .toString('utf8')
    .split('\n')
    .filter((l) => l !== '' && !l.startsWith('-----'))
    .join('');
  secrets.push(key, pemBody);
  return secrets.filter((s) => s.length >= 16);
}

/** The controllers' log lines. */
export function controllerLogs(controllers: readonly Controller[]): Haystack[] {
  return controllers.map((c) => ({
    what: `${c.process.name} log`,
    text: c
      .logs()
      .map((l) => JSON.stringify(l))
      .join('\n'),
  }));
}

/** Everything the controllers produced, with the commits of every pull request's branch when the lab has a forge. */
export async function controllerOutputs(lab: JobLab, controllers: readonly Controller[]): Promise<Haystack[]> {
  const haystacks = controllerLogs(controllers);
  const events = await lab.kc.makeApiClient(EventsV1Api).listEventForAllNamespaces();
  haystacks.push({ what: 'Events', text: JSON.stringify(events.items) });
  const custom = lab.kc.makeApiClient(CustomObjectsApi);
  const plans: unknown = await custom.listClusterCustomObject({
    group: 'kangalpatch.ozalp.dk',
    version: 'v1alpha1',
    plural: 'patchplans',
  });
  haystacks.push({ what: 'PatchPlans', text: JSON.stringify(plans) });
  const jobs: unknown = await custom.listClusterCustomObject({
    group: 'kangalpatch.ozalp.dk',
    version: 'v1alpha1',
    plural: 'patchjobs',
  });
  haystacks.push({ what: 'PatchJobs', text: JSON.stringify(jobs) });
  const forge = lab.forge;
  if (forge && lab.plans) {
    const res = await fetch(`${forge.apiUrl}/repos/acme/plans/pulls?state=all`, {
      headers: { authorization: `token ${forge.token}`, accept: 'application/vnd.github+json' },
    });
    const pulls = (await res.json()) as { head: { ref: string } }[];
    haystacks.push({ what: 'pull requests', text: JSON.stringify(pulls) });
    for (const p of pulls) {
      await lab.plans.git(['fetch', '--quiet', 'origin', p.head.ref]);
      haystacks.push({ what: `branch ${p.head.ref}`, text: await lab.plans.git(['log', '-p', 'FETCH_HEAD']) });
    }
    haystacks.push({ what: 'forge request URLs and bodies', text: JSON.stringify(forge.requests) });
  }
  return haystacks;
}

/** Where a secret was found (`<what>`), empty when nowhere. */
export function secretLeaks(haystacks: readonly Haystack[], secrets: readonly string[]): string[] {
  return haystacks.filter((h) => secrets.some((s) => h.text.includes(s))).map((h) => h.what);
}
