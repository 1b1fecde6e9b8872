// Auto-update proposals as the forge holds them: branch names, titles and labels we write, and what
// the list of a template's pull requests means when read back (the decision survives restarts:
// open = the open proposal, closed without merge = skipped, merged = a child on its way). Pure.
import semver from 'semver';
import type { PullRequestView } from '../../forge/port.js';

/** Head-branch prefix of every proposal on `cluster`: `kangal-patch/<cluster>/auto-update/`. */
export const clusterProposalPrefix = (cluster: string): string => `kangal-patch/${cluster}/auto-update/`;

/** Head-branch prefix of every proposal of `template`: `kangal-patch/<cluster>/auto-update/<template>-`. */
export const proposalBranchPrefix = (cluster: string, template: string): string =>
  `${clusterProposalPrefix(cluster)}${template}-`;

export const proposalBranch = (cluster: string, template: string, version: string): string =>
  `${proposalBranchPrefix(cluster, template)}${version}`;

export function proposalTitle(cluster: string, template: string, version: string): string {
  return `KangalPatch [${cluster}]: Talos ${version} for ${template}`;
}

/**
 * Appended to the title of a proposal KangalPatch closed itself: because a newer one replaced it,
 * or because its template is gone. Such a PR is not a human "skip" (the title is ours to write; a
 * label would need another forge call), so a template added again proposes that version again.
 */
export const SUPERSEDED_MARK = ' (superseded)';
export const TEMPLATE_GONE_MARK = ' (template deleted)';
/** Closed because an upstream stage rolled the version back (promotion): not a skip, it may be proven again. */
export const ROLLED_BACK_MARK = ' (rolled back upstream)';
const CLOSED_BY_US = [SUPERSEDED_MARK, TEMPLATE_GONE_MARK, ROLLED_BACK_MARK];
/** On the title of an open proposal while a later upstream rollout has failed (promotion); a human may still merge. */
export const BLOCKED_MARK = ' (blocked: upstream failure)';

export function proposalLabels(cluster: string, version: string): string[] {
  return ['kangal-patch', 'kangal-patch/auto-update', `cluster/${cluster}`, `talos/${version}`];
}

export interface ProposalPr {
  version: string;
  pr: PullRequestView;
}

export interface ProposalsOnForge {
  /** Open proposals, highest version first (more than one only when someone reopened an old one). */
  open: ProposalPr[];
  /** Versions whose proposal a human closed without merging. */
  skipped: string[];
  /** Versions whose proposal was merged. */
  merged: string[];
}

/** The version a proposal branch names, or undefined (another template's branch, e.g. `prod-eu-…` under `prod-`). */
export function versionOfBranch(prefix: string, head: string): string | undefined {
  if (!head.startsWith(prefix)) return undefined;
  const v = head.slice(prefix.length);
  return /^v\d+\.\d+\.\d+$/.test(v) && semver.valid(v) !== null ? v : undefined;
}

/** The template a proposal branch of the cluster belongs to (`<template>-vX.Y.Z`), or undefined. */
export function templateOfBranch(cluster: string, head: string): string | undefined {
  const prefix = clusterProposalPrefix(cluster);
  if (!head.startsWith(prefix)) return undefined;
  const m = /^(.+)-(v\d+\.\d+\.\d+)$/.exec(head.slice(prefix.length));
  return m?.[1] !== undefined && m[2] !== undefined && semver.valid(m[2]) !== null ? m[1] : undefined;
}

export function readProposals(prs: readonly PullRequestView[], prefix: string): ProposalsOnForge {
  const out: ProposalsOnForge = { open: [], skipped: [], merged: [] };
  for (const pr of prs) {
    const version = versionOfBranch(prefix, pr.head);
    if (version === undefined) continue;
    if (pr.state === 'open') out.open.push({ version, pr });
    else if (pr.merged) out.merged.push(version);
    else if (!CLOSED_BY_US.some((mark) => pr.title.endsWith(mark))) out.skipped.push(version);
  }
  out.open.sort((a, b) => semver.rcompare(a.version, b.version));
  const uniq = (vs: string[]): string[] => [...new Set(vs)].sort(semver.compare);
  // A version both closed and merged (or reopened) is not skipped: the later, stronger answer wins.
  out.merged = uniq(out.merged);
  out.skipped = uniq(out.skipped).filter((v) => !out.merged.includes(v) && !out.open.some((o) => o.version === v));
  return out;
}
