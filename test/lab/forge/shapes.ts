// GitHub REST JSON shapes, built the way api.github.com fills them. The OpenAPI response
// validation in api.ts checks every one of them on every response.
import type { ChangedFile } from './git.js';

export interface RepoState {
  owner: string;
  name: string;
  id: number;
  defaultBranch: string;
  bareDir: string;
  createdAt: string;
  nextNumber: number;
  pulls: Map<number, PullState>;
  labels: Map<string, LabelState>;
  comments: CommentState[];
  statuses: StatusState[];
  releases: ReleaseState[];
}

export interface PullState {
  id: number;
  number: number;
  title: string;
  body: string | null;
  state: 'open' | 'closed';
  draft: boolean;
  maintainerCanModify: boolean;
  headRef: string;
  headSha: string;
  baseRef: string;
  labels: string[];
  user: string;
  createdAt: string;
  updatedAt: string;
  closedAt: string | null;
  mergedAt: string | null;
  mergeCommitSha: string | null;
  mergedBy: string | null;
}

export interface LabelState {
  id: number;
  name: string;
  color: string;
  description: string | null;
}

export interface CommentState {
  id: number;
  issueNumber: number;
  body: string;
  user: string;
  createdAt: string;
  updatedAt: string;
}

export interface StatusState {
  id: number;
  sha: string;
  /** GitHub's four states plus Gitea's `warning` and `skipped`. */
  state: 'error' | 'failure' | 'pending' | 'success' | 'warning' | 'skipped';
  targetUrl: string | null;
  description: string | null;
  context: string;
  user: string;
  createdAt: string;
}

export interface ReleaseState {
  id: number;
  tagName: string;
  targetCommitish: string;
  name: string | null;
  body: string | null;
  draft: boolean;
  prerelease: boolean;
  user: string;
  createdAt: string;
  publishedAt: string | null;
}

export interface PullDetails {
  baseSha: string;
  mergeable: boolean | null;
  mergeableState: string;
  commits: number;
  additions: number;
  deletions: number;
  changedFiles: number;
}

/** Gitea's default WORK_IN_PROGRESS_PREFIXES, matched case-insensitively at the start of the title. */
const WORK_IN_PROGRESS_PREFIXES = ['WIP:', '[WIP]'];

/**
 * A draft through either surface: GitHub's draft flag, or Gitea's "work in progress" title
 * prefix (Gitea has no draft flag of its own), so a test reads the same answer either way.
 */
export function isDraft(p: PullState): boolean {
  const title = p.title.toUpperCase();
  return p.draft || WORK_IN_PROGRESS_PREFIXES.some((prefix) => title.startsWith(prefix));
}

/** GitHub's timestamp format: ISO 8601 without milliseconds. */
export function now(): string {
  return new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
}

export class Shapes {
  constructor(private readonly base: () => string) {}

  private get api(): string {
    return this.base();
  }

  nodeId(kind: string, id: number): string {
    return Buffer.from(`0:${kind}${id}`).toString('base64').replace(/=+$/, '');
  }

  user(login: string): Record<string, unknown> {
    const id = 1 + [...login].reduce((h, c) => (h * 31 + c.charCodeAt(0)) % 1_000_000, 7);
    const u = `${this.api}/users/${login}`;
    return {
      login,
      id,
      node_id: this.nodeId('User', id),
      avatar_url: `${this.api}/avatars/${login}`,
      gravatar_id: '',
      url: u,
      html_url: `${this.api}/${login}`,
      followers_url: `${u}/followers`,
      following_url: `${u}/following{/other_user}`,
      gists_url: `${u}/gists{/gist_id}`,
      starred_url: `${u}/starred{/owner}{/repo}`,
      subscriptions_url: `${u}/subscriptions`,
      organizations_url: `${u}/orgs`,
      repos_url: `${u}/repos`,
      events_url: `${u}/events{/privacy}`,
      received_events_url: `${u}/received_events`,
      type: 'User',
      user_view_type: 'public',
      site_admin: false,
    };
  }

  repository(r: RepoState, pushedAt: string | null): Record<string, unknown> {
    const u = `${this.api}/repos/${r.owner}/${r.name}`;
    const html = `${this.api}/${r.owner}/${r.name}`;
    return {
      id: r.id,
      node_id: this.nodeId('Repository', r.id),
      name: r.name,
      full_name: `${r.owner}/${r.name}`,
      owner: this.user(r.owner),
      private: true,
      html_url: html,
      description: null,
      fork: false,
      url: u,
      archive_url: `${u}/{archive_format}{/ref}`,
      assignees_url: `${u}/assignees{/user}`,
      blobs_url: `${u}/git/blobs{/sha}`,
      branches_url: `${u}/branches{/branch}`,
      collaborators_url: `${u}/collaborators{/collaborator}`,
      comments_url: `${u}/comments{/number}`,
      commits_url: `${u}/commits{/sha}`,
      compare_url: `${u}/compare/{base}...{head}`,
      contents_url: `${u}/contents/{+path}`,
      contributors_url: `${u}/contributors`,
      deployments_url: `${u}/deployments`,
      downloads_url: `${u}/downloads`,
      events_url: `${u}/events`,
      forks_url: `${u}/forks`,
      git_commits_url: `${u}/git/commits{/sha}`,
      git_refs_url: `${u}/git/refs{/sha}`,
      git_tags_url: `${u}/git/tags{/sha}`,
      git_url: `${html}.git`,
      issue_comment_url: `${u}/issues/comments{/number}`,
      issue_events_url: `${u}/issues/events{/number}`,
      issues_url: `${u}/issues{/number}`,
      keys_url: `${u}/keys{/key_id}`,
      labels_url: `${u}/labels{/name}`,
      languages_url: `${u}/languages`,
      merges_url: `${u}/merges`,
      milestones_url: `${u}/milestones{/number}`,
      notifications_url: `${u}/notifications{?since,all,participating}`,
      pulls_url: `${u}/pulls{/number}`,
      releases_url: `${u}/releases{/id}`,
      ssh_url: `${html}.git`,
      stargazers_url: `${u}/stargazers`,
      statuses_url: `${u}/statuses/{sha}`,
      subscribers_url: `${u}/subscribers`,
      subscription_url: `${u}/subscription`,
      tags_url: `${u}/tags`,
      teams_url: `${u}/teams`,
      trees_url: `${u}/git/trees{/sha}`,
      clone_url: `${html}.git`,
      mirror_url: null,
      hooks_url: `${u}/hooks`,
      svn_url: html,
      homepage: null,
      language: null,
      forks_count: 0,
      stargazers_count: 0,
      watchers_count: 0,
      size: 0,
      default_branch: r.defaultBranch,
      open_issues_count: this.openCount(r),
      is_template: false,
      topics: [],
      has_issues: true,
      has_projects: false,
      has_wiki: false,
      has_pages: false,
      has_downloads: true,
      has_discussions: false,
      archived: false,
      disabled: false,
      visibility: 'private',
      pushed_at: pushedAt ?? r.createdAt,
      created_at: r.createdAt,
      updated_at: r.createdAt,
      permissions: { admin: false, maintain: false, push: true, triage: true, pull: true },
      allow_merge_commit: true,
      allow_squash_merge: true,
      allow_rebase_merge: false,
      delete_branch_on_merge: false,
      license: null,
      forks: 0,
      open_issues: this.openCount(r),
      watchers: 0,
    };
  }

  fullRepository(r: RepoState, pushedAt: string | null): Record<string, unknown> {
    return { ...this.repository(r, pushedAt), subscribers_count: 0, network_count: 0 };
  }

  private openCount(r: RepoState): number {
    return [...r.pulls.values()].filter((p) => p.state === 'open').length;
  }

  label(r: RepoState, l: LabelState): Record<string, unknown> {
    return {
      id: l.id,
      node_id: this.nodeId('Label', l.id),
      url: `${this.api}/repos/${r.owner}/${r.name}/labels/${encodeURIComponent(l.name)}`,
      name: l.name,
      description: l.description,
      color: l.color,
      default: false,
    };
  }

  private pullCommon(r: RepoState, p: PullState, baseSha: string): Record<string, unknown> {
    const u = `${this.api}/repos/${r.owner}/${r.name}`;
    const html = `${this.api}/${r.owner}/${r.name}/pull/${p.number}`;
    const repo = this.repository(r, null);
    const links = {
      self: { href: `${u}/pulls/${p.number}` },
      html: { href: html },
      issue: { href: `${u}/issues/${p.number}` },
      comments: { href: `${u}/issues/${p.number}/comments` },
      review_comments: { href: `${u}/pulls/${p.number}/comments` },
      review_comment: { href: `${u}/pulls/comments{/number}` },
      commits: { href: `${u}/pulls/${p.number}/commits` },
      statuses: { href: `${u}/statuses/${p.headSha}` },
    };
    return {
      url: `${u}/pulls/${p.number}`,
      id: p.id,
      node_id: this.nodeId('PullRequest', p.id),
      html_url: html,
      diff_url: `${html}.diff`,
      patch_url: `${html}.patch`,
      issue_url: `${u}/issues/${p.number}`,
      commits_url: `${u}/pulls/${p.number}/commits`,
      review_comments_url: `${u}/pulls/${p.number}/comments`,
      review_comment_url: `${u}/pulls/comments{/number}`,
      comments_url: `${u}/issues/${p.number}/comments`,
      statuses_url: `${u}/statuses/${p.headSha}`,
      number: p.number,
      state: p.state,
      locked: false,
      title: p.title,
      user: this.user(p.user),
      body: p.body,
      labels: p.labels.flatMap((n) => {
        const l = r.labels.get(n);
        return l ? [this.label(r, l)] : [];
      }),
      milestone: null,
      active_lock_reason: null,
      created_at: p.createdAt,
      updated_at: p.updatedAt,
      closed_at: p.closedAt,
      merged_at: p.mergedAt,
      merge_commit_sha: p.mergeCommitSha,
      assignee: null,
      assignees: [],
      requested_reviewers: [],
      requested_teams: [],
      head: { label: `${r.owner}:${p.headRef}`, ref: p.headRef, sha: p.headSha, user: this.user(r.owner), repo },
      base: { label: `${r.owner}:${p.baseRef}`, ref: p.baseRef, sha: baseSha, user: this.user(r.owner), repo },
      _links: links,
      author_association: 'OWNER',
      auto_merge: null,
      draft: isDraft(p),
    };
  }

  pullSimple(r: RepoState, p: PullState, baseSha: string): Record<string, unknown> {
    const common = this.pullCommon(r, p, baseSha);
    // pull-request-simple declares labels[].description as a non-nullable string (the full pull allows null).
    const labels = (common.labels as Record<string, unknown>[]).map((l) => ({
      ...l,
      description: l.description ?? '',
    }));
    return { ...common, labels };
  }

  pull(r: RepoState, p: PullState, d: PullDetails, comments: number): Record<string, unknown> {
    return {
      ...this.pullCommon(r, p, d.baseSha),
      merged: p.mergedAt !== null,
      mergeable: d.mergeable,
      rebaseable: false,
      mergeable_state: d.mergeableState,
      merged_by: p.mergedBy === null ? null : this.user(p.mergedBy),
      comments,
      review_comments: 0,
      maintainer_can_modify: p.maintainerCanModify,
      commits: d.commits,
      additions: d.additions,
      deletions: d.deletions,
      changed_files: d.changedFiles,
    };
  }

  comment(r: RepoState, c: CommentState): Record<string, unknown> {
    const u = `${this.api}/repos/${r.owner}/${r.name}`;
    return {
      id: c.id,
      node_id: this.nodeId('IssueComment', c.id),
      url: `${u}/issues/comments/${c.id}`,
      body: c.body,
      html_url: `${this.api}/${r.owner}/${r.name}/pull/${c.issueNumber}#issuecomment-${c.id}`,
      user: this.user(c.user),
      created_at: c.createdAt,
      updated_at: c.updatedAt,
      issue_url: `${u}/issues/${c.issueNumber}`,
      author_association: 'OWNER',
    };
  }

  /** A diff-entry of pulls/list-files. */
  diffEntry(r: RepoState, headSha: string, f: ChangedFile): Record<string, unknown> {
    const html = `${this.api}/${r.owner}/${r.name}`;
    return {
      sha: f.sha,
      filename: f.filename,
      status: f.status,
      additions: f.additions,
      deletions: f.deletions,
      changes: f.additions + f.deletions,
      blob_url: `${html}/blob/${headSha}/${f.filename}`,
      raw_url: `${html}/raw/${headSha}/${f.filename}`,
      contents_url: `${this.api}/repos/${r.owner}/${r.name}/contents/${f.filename}?ref=${headSha}`,
      ...(f.previousFilename === undefined ? {} : { previous_filename: f.previousFilename }),
    };
  }

  status(r: RepoState, s: StatusState): Record<string, unknown> {
    return {
      url: `${this.api}/repos/${r.owner}/${r.name}/statuses/${s.sha}`,
      avatar_url: null,
      id: s.id,
      node_id: this.nodeId('StatusContext', s.id),
      state: githubStatusState(s.state),
      description: s.description,
      target_url: s.targetUrl,
      context: s.context,
      created_at: s.createdAt,
      updated_at: s.createdAt,
      creator: this.user(s.user),
    };
  }

  release(r: RepoState, rel: ReleaseState): Record<string, unknown> {
    const u = `${this.api}/repos/${r.owner}/${r.name}`;
    return {
      url: `${u}/releases/${rel.id}`,
      html_url: `${this.api}/${r.owner}/${r.name}/releases/tag/${rel.tagName}`,
      assets_url: `${u}/releases/${rel.id}/assets`,
      upload_url: `${u}/releases/${rel.id}/assets{?name,label}`,
      tarball_url: `${u}/tarball/${rel.tagName}`,
      zipball_url: `${u}/zipball/${rel.tagName}`,
      id: rel.id,
      node_id: this.nodeId('Release', rel.id),
      tag_name: rel.tagName,
      target_commitish: rel.targetCommitish,
      name: rel.name,
      body: rel.body,
      draft: rel.draft,
      prerelease: rel.prerelease,
      immutable: false,
      created_at: rel.createdAt,
      published_at: rel.publishedAt,
      updated_at: rel.publishedAt ?? rel.createdAt,
      author: this.user(rel.user),
      assets: [],
    };
  }
}

/** GitHub has no `warning`/`skipped` (Gitea-only states): the nearest GitHub state. */
function githubStatusState(state: StatusState['state']): 'error' | 'failure' | 'pending' | 'success' {
  if (state === 'warning') return 'failure';
  if (state === 'skipped') return 'success';
  return state;
}
