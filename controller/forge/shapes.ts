// The parts of forge API answers the adapters read, as zod shapes: each 2xx answer is checked
// against its shape (answer.ts) before a view is built from it, so a forge that answers a number
// where a string belongs, or an array for an object, is an InvalidResponse, never a TypeError deep
// in a view. Extra fields are allowed (the forges send far more).
import { z } from 'zod';

const branchRef = z.object({ ref: z.string(), sha: z.string().optional() });
const label = z.object({ name: z.string().optional() });

/** GitHub REST pull request (pulls.get, pulls.list, pulls.create and pulls.update agree on these). */
export const githubPullShape = z.object({
  number: z.number().int(),
  html_url: z.string(),
  state: z.string(),
  merged_at: z.string().nullable().optional(),
  draft: z.boolean().optional(),
  title: z.string(),
  head: branchRef,
  base: branchRef,
  labels: z.array(label),
  node_id: z.string().optional(),
});
export type GitHubPull = z.infer<typeof githubPullShape>;

/** Gitea PullRequest (its OpenAPI description). */
export const giteaPullShape = z.object({
  number: z.number().int(),
  html_url: z.string(),
  state: z.string(),
  merged: z.boolean().optional(),
  merged_at: z.string().nullable().optional(),
  draft: z.boolean().optional(),
  title: z.string(),
  head: branchRef,
  base: branchRef,
  labels: z.array(label).nullable().optional(),
});
export type GiteaPull = z.infer<typeof giteaPullShape>;

/** A changed file of a pull request (GitHub diff-entry, Gitea ChangedFile). */
export const changedFileShape = z.object({ filename: z.string(), previous_filename: z.string().nullable().optional() });

/** A commit status (GitHub status, Gitea CommitStatus: `state` there is `status`). */
export const commitStatusShape = z.object({
  context: z.string().nullable().optional(),
  state: z.string().optional(),
  status: z.string().optional(),
  description: z.string().nullable().optional(),
});

/** Gitea Label. */
export const giteaLabelShape = z.object({ id: z.number().int(), name: z.string() });

/** An answer only acknowledged (a comment, a commit status, labels added): any JSON object or list. */
export const acknowledgedShape = z.union([z.record(z.string(), z.unknown()), z.array(z.unknown())]);

/** A GraphQL answer: an object (errors inside it are Octokit's to report). */
export const graphqlShape = z.record(z.string(), z.unknown());
