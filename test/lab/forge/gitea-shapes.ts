// Gitea REST JSON shapes (modules/structs, services/convert of Gitea), built from the same store
// as the GitHub shapes. The OpenAPI response validation in gitea-api.ts checks every one of them
// against Gitea's published description on every response. Nil Go pointers are JSON null, as
// Gitea sends them; a string Gitea sends empty but the description types as `format: uri` is
// left out (an empty string is no URI, and an absent property is what the description allows).
import type { ChangedFile } from './git.js';
import {
  isDraft,
  type CommentState,
  type LabelState,
  type PullDetails,
  type PullState,
  type RepoState,
  type StatusState,
  type Shapes,
} from './shapes.js';

/** What Gitea's pull request shape adds to the store's details: its comment count and the merge base of head and base. */
export interface GiteaPullDetails extends PullDetails {
  comments: number;
  mergeBase: string;
}

/** Gitea's zero time, which it sends for timestamps it never set. */
const ZERO_TIME = '0001-01-01T00:00:00Z';

export class GiteaShapes {
  /** `base`: the forge's URL (Gitea's AppURL without the trailing slash); `github`: for the shared user ids. */
  constructor(
    private readonly base: () => string,
    private readonly github: Shapes,
  ) {}

  private get api(): string {
    return `${this.base()}/api/v1`;
  }

  user(login: string): Record<string, unknown> {
    return {
      id: this.github.user(login).id,
      login,
      login_name: '',
      source_id: 0,
      full_name: '',
      email: `${login}@noreply.lab.invalid`,
      avatar_url: `${this.base()}/avatars/${login}`,
      html_url: `${this.base()}/${login}`,
      language: '',
      is_admin: false,
      last_login: ZERO_TIME,
      created: ZERO_TIME,
      restricted: false,
      active: true,
      prohibit_login: false,
      location: '',
      website: '',
      description: '',
      visibility: 'public',
      followers_count: 0,
      following_count: 0,
      starred_repos_count: 0,
    };
  }

  repository(r: RepoState): Record<string, unknown> {
    const html = `${this.base()}/${r.owner}/${r.name}`;
    const open = [...r.pulls.values()].filter((p) => p.state === 'open').length;
    return {
      id: r.id,
      owner: this.user(r.owner),
      name: r.name,
      full_name: `${r.owner}/${r.name}`,
      description: '',
      empty: false,
      private: true,
      fork: false,
      template: false,
      parent: null,
      mirror: false,
      size: 0,
      language: '',
      languages_url: `${this.api}/repos/${r.owner}/${r.name}/languages`,
      html_url: html,
      url: `${this.api}/repos/${r.owner}/${r.name}`,
      link: '',
      ssh_url: `ssh://git@${new URL(this.base()).hostname}/${r.owner}/${r.name}.git`,
      clone_url: `${html}.git`,
      website: '',
      stars_count: 0,
      forks_count: 0,
      watchers_count: 0,
      open_issues_count: 0,
      open_pr_counter: open,
      release_counter: r.releases.length,
      default_branch: r.defaultBranch,
      archived: false,
      created_at: r.createdAt,
      updated_at: r.createdAt,
      archived_at: '1970-01-01T00:00:00Z',
      permissions: { admin: false, push: true, pull: true },
      has_code: true,
      has_issues: true,
      internal_tracker: {
        enable_time_tracker: false,
        allow_only_contributors_to_track_time: true,
        enable_issue_dependencies: true,
      },
      external_tracker: null,
      has_wiki: false,
      external_wiki: null,
      has_pull_requests: true,
      has_projects: false,
      projects_mode: 'all',
      has_releases: true,
      has_packages: false,
      has_actions: false,
      ignore_whitespace_conflicts: false,
      allow_merge_commits: true,
      allow_rebase: false,
      allow_rebase_explicit: false,
      allow_squash_merge: true,
      allow_fast_forward_only_merge: true,
      allow_rebase_update: false,
      allow_manual_merge: false,
      autodetect_manual_merge: false,
      allow_merge_update: true,
      default_delete_branch_after_merge: false,
      default_merge_style: 'merge',
      default_update_style: 'merge',
      default_allow_maintainer_edit: false,
      default_target_branch: r.defaultBranch,
      mirror_interval: '',
      object_format_name: 'sha1',
      mirror_updated: ZERO_TIME,
      repo_transfer: null,
      topics: [],
      licenses: [],
    };
  }

  label(r: RepoState, l: LabelState): Record<string, unknown> {
    return {
      id: l.id,
      name: l.name,
      exclusive: false,
      is_archived: false,
      color: l.color.replace(/^#/, ''),
      description: l.description ?? '',
      url: `${this.api}/repos/${r.owner}/${r.name}/labels/${l.id}`,
    };
  }

  private branch(r: RepoState, ref: string, sha: string): Record<string, unknown> {
    return { label: ref, ref, sha, repo_id: r.id, repo: this.repository(r) };
  }

  pull(r: RepoState, p: PullState, d: GiteaPullDetails): Record<string, unknown> {
    const html = `${this.base()}/${r.owner}/${r.name}/pulls/${p.number}`;
    return {
      id: p.id,
      url: `${this.api}/repos/${r.owner}/${r.name}/pulls/${p.number}`,
      number: p.number,
      user: this.user(p.user),
      title: p.title,
      body: p.body ?? '',
      labels: p.labels.flatMap((n) => {
        const l = r.labels.get(n);
        return l ? [this.label(r, l)] : [];
      }),
      milestone: null,
      assignee: null,
      assignees: null,
      requested_reviewers: [],
      requested_reviewers_teams: [],
      state: p.state,
      draft: isDraft(p),
      is_locked: false,
      comments: d.comments,
      review_comments: 0,
      additions: d.additions,
      deletions: d.deletions,
      changed_files: d.changedFiles,
      html_url: html,
      diff_url: `${html}.diff`,
      patch_url: `${html}.patch`,
      mergeable: d.mergeable === true,
      merged: p.mergedAt !== null,
      merged_at: p.mergedAt,
      merge_commit_sha: p.mergeCommitSha,
      merged_by: p.mergedBy === null ? null : this.user(p.mergedBy),
      allow_maintainer_edit: p.maintainerCanModify,
      base: this.branch(r, p.baseRef, d.baseSha),
      head: this.branch(r, p.headRef, p.headSha),
      merge_base: d.mergeBase,
      due_date: null,
      created_at: p.createdAt,
      updated_at: p.updatedAt,
      closed_at: p.closedAt,
      pin_order: 0,
      content_version: 0,
    };
  }

  comment(r: RepoState, c: CommentState): Record<string, unknown> {
    const pr = `${this.base()}/${r.owner}/${r.name}/pulls/${c.issueNumber}`;
    return {
      id: c.id,
      html_url: `${pr}#issuecomment-${c.id}`,
      pull_request_url: pr,
      issue_url: `${this.base()}/${r.owner}/${r.name}/issues/${c.issueNumber}`,
      user: this.user(c.user),
      original_author: '',
      original_author_id: 0,
      body: c.body,
      assets: [],
      created_at: c.createdAt,
      updated_at: c.updatedAt,
    };
  }

  /** A ChangedFile of repoGetPullRequestFiles (Gitea says `deleted` where GitHub says `removed`). */
  changedFile(r: RepoState, headSha: string, f: ChangedFile): Record<string, unknown> {
    const html = `${this.base()}/${r.owner}/${r.name}`;
    return {
      filename: f.filename,
      ...(f.previousFilename === undefined ? {} : { previous_filename: f.previousFilename }),
      status: f.status === 'removed' ? 'deleted' : f.status,
      additions: f.additions,
      deletions: f.deletions,
      changes: f.additions + f.deletions,
      html_url: `${html}/src/commit/${headSha}/${f.filename}`,
      contents_url: `${this.api}/repos/${r.owner}/${r.name}/contents/${f.filename}?ref=${headSha}`,
      raw_url: `${html}/raw/commit/${headSha}/${f.filename}`,
    };
  }

  status(r: RepoState, s: StatusState): Record<string, unknown> {
    return {
      id: s.id,
      status: s.state,
      ...(s.targetUrl ? { target_url: s.targetUrl } : {}),
      description: s.description ?? '',
      url: `${this.api}/repos/${r.owner}/${r.name}/statuses/${s.sha}`,
      context: s.context,
      creator: this.user(s.user),
      created_at: s.createdAt,
      updated_at: s.createdAt,
    };
  }
}
