// Whether a branch KangalPatch writes (a rollout report, an auto-update proposal) still holds only
// what KangalPatch writes there, and what to say when it does not. Pure.
//
// Who wrote a commit is never read from its author or committer: anyone with push access sets
// those. KangalPatch knows its commits by their SHAs: those it pushed in this process, and after a
// restart (or on another replica) those carrying its commit status "Written by KangalPatch" under its
// context, set right after each push, and only if the commit changes nothing but KangalPatch's own
// files. A forge lets anyone with write access set statuses too, so that record alone is not trusted
// with anything that matters: it only decides whether a later change to KangalPatch's own files is
// backed off from (a human edit) or written over. What may be merged is decided from the pull
// request's content alone, whoever wrote it: every path the forge says the PR changes must be one
// of KangalPatch's own files (foreignFiles), and the branch tip must hold what KangalPatch wrote
// (the writer rewrites its files before a PR is marked ready). A PR that changes anything else is
// not marked ready (a proposal goes back to a draft), gets one comment naming the files, and the
// head's commit status fails.

export const WRITTEN_BY = 'Written by KangalPatch';
const DESCRIPTION_MAX = 140;
const LISTED_IN_COMMENT = 50;

export interface StatusSeen {
  context: string;
  state: string;
  description: string;
}

/** The paths a PR changes that are not KangalPatch's own, sorted, each once. */
export function foreignFiles(changed: readonly string[], own: readonly string[]): string[] {
  const mine = new Set(own);
  return [...new Set(changed.filter((f) => !mine.has(f)))].sort();
}

/** A commit is KangalPatch's when it changes only `own` files (one parent, so the change is known) and its SHA is one it pushed or recorded. */
export function isOwnCommit(
  c: { parents: number; changed: readonly string[] | undefined },
  own: readonly string[],
  recorded: boolean,
): boolean {
  return recorded && c.parents === 1 && c.changed !== undefined && foreignFiles(c.changed, own).length === 0;
}

/** Whether the statuses of a commit include KangalPatch's record of having written it. */
export function isRecordedCommit(statuses: readonly StatusSeen[], context: string): boolean {
  return statuses.some((s) => s.context === context && s.description.startsWith(WRITTEN_BY));
}

export function recordDescription(what: string): string {
  return clip(`${WRITTEN_BY}: ${what}`);
}

export interface BranchVerdict {
  /** Paths outside KangalPatch's own files; empty when the PR is clean. */
  foreign: string[];
  /** The status the head gets; undefined when it has it already. */
  status: { state: 'success' | 'failure'; description: string } | undefined;
  /** The comment naming the foreign files; undefined when one was posted for them already. */
  comment: string | undefined;
  /** What identifies the foreign files said (the failure description): pass it back as `noted`. */
  noted: string | undefined;
}

export interface BranchInput {
  /** Every path the forge says the PR changes. */
  changed: readonly string[];
  own: readonly string[];
  context: string;
  /** The statuses of the PR's head commit. */
  headStatuses: readonly StatusSeen[];
  /** The failure description a comment was posted for (remembered by the caller). */
  noted: string | undefined;
  /** What the PR is, in the comment: `rollout report`, `proposal`. */
  what: string;
  /** What happens to the PR while it is not clean, in the comment. */
  consequence: string;
}

export function branchVerdict(i: BranchInput): BranchVerdict {
  const foreign = foreignFiles(i.changed, i.own);
  const has = (state: string, description: string): boolean =>
    i.headStatuses.some((s) => s.context === i.context && s.state === state && s.description === description);
  if (foreign.length === 0) {
    const description = clip(`Only KangalPatch's files: ${i.own.join(', ')}`);
    return {
      foreign,
      status: has('success', description) ? undefined : { state: 'success', description },
      comment: undefined,
      noted: undefined,
    };
  }
  const description = clip(`Changes files outside KangalPatch's own: ${foreign.join(', ')}`);
  const commented = i.noted === description || has('failure', description);
  const listed = foreign.slice(0, LISTED_IN_COMMENT).map((f) => `- \`${f.replace(/`/g, "'")}\``);
  const more = foreign.length > LISTED_IN_COMMENT ? [`- and ${foreign.length - LISTED_IN_COMMENT} more`] : [];
  const comment = [
    `KangalPatch ${i.consequence}: this branch changes files that are not part of the ${i.what} KangalPatch writes, and a pull request it opened must not carry other changes into the base branch:`,
    '',
    ...listed,
    ...more,
    '',
    `Only ${i.own.map((f) => `\`${f}\``).join(', ')} belong here. Remove the other changes from this branch (KangalPatch never force-pushes over commits it did not write), or close this pull request.`,
  ].join('\n');
  return {
    foreign,
    status: has('failure', description) ? undefined : { state: 'failure', description },
    comment: commented ? undefined : comment,
    noted: description,
  };
}

function clip(s: string): string {
  return s.length > DESCRIPTION_MAX ? `${s.slice(0, DESCRIPTION_MAX - 1)}…` : s;
}
