// A clone of a lab forge repository driven with the git CLI, as a person pushing plan files would:
// the token travels in an extra header through the environment, never in the URL or argv.
import { mkdir, rm, symlink, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { git } from './git.js';

export interface WorkingCopy {
  readonly dir: string;
  write(path: string, content: string): Promise<void>;
  remove(path: string): Promise<void>;
  symlink(path: string, target: string): Promise<void>;
  /** Runs git in the clone (with the token header). */
  git(args: string[]): Promise<string>;
  /** `git add -A`, commit, push to the branch; returns the new commit. */
  commitAndPush(message: string): Promise<string>;
}

export async function cloneWorkingCopy(opts: {
  cloneUrl: string;
  token: string;
  dir: string;
  branch?: string;
}): Promise<WorkingCopy> {
  const basic = Buffer.from(`x-access-token:${opts.token}`).toString('base64');
  const env = {
    GIT_CONFIG_COUNT: '1',
    GIT_CONFIG_KEY_0: 'http.extraHeader',
    GIT_CONFIG_VALUE_0: `Authorization: Basic ${basic}`,
  };
  const branch = opts.branch ?? 'main';
  await mkdir(dirname(opts.dir), { recursive: true });
  await git(['clone', '--quiet', '--branch', branch, opts.cloneUrl, opts.dir], { env });
  const run = (args: string[]): Promise<string> => git(args, { cwd: opts.dir, env });
  const inside = (path: string): string => {
    if (path.split('/').includes('..')) throw new Error(`refusing a path outside the clone: ${path}`);
    return join(opts.dir, path);
  };
  return {
    dir: opts.dir,
    git: run,
    async write(path, content) {
      await mkdir(dirname(inside(path)), { recursive: true });
      await writeFile(inside(path), content);
    },
    async remove(path) {
      await rm(inside(path), { recursive: true, force: true });
    },
    async symlink(path, target) {
      await mkdir(dirname(inside(path)), { recursive: true });
      await symlink(target, inside(path));
    },
    async commitAndPush(message) {
      await run(['add', '-A']);
      await run(['commit', '--quiet', '--allow-empty', '-m', message]);
      await run(['push', '--quiet', 'origin', `HEAD:${branch}`]);
      return run(['rev-parse', 'HEAD']);
    },
  };
}
