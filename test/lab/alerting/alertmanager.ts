// The lab's Alertmanager: the real one (built by build-alerting.sh), on a free loopback port with a
// generated config (one receiver that sends nowhere), its own storage dir, clustering off. Tests post
// alerts and read silences through its API v2, as Prometheus and people do.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePort } from '../net.js';
import { makeLabDir, spawnManaged } from '../process.js';
import { waitFor } from '../wait.js';
import { alertmanagerBinary } from './binaries.js';

interface LabAlert {
  labels: Record<string, string>;
  annotations?: Record<string, string>;
}

/** A silence as API v2 returns it (the fields tests look at). */
export interface LabSilence {
  id: string;
  status: { state: 'active' | 'pending' | 'expired' };
  matchers: { name: string; value: string; isRegex: boolean; isEqual?: boolean }[];
  startsAt: string;
  endsAt: string;
  createdBy: string;
  comment: string;
}

export interface LabAlertmanager {
  /** `http://127.0.0.1:PORT`. */
  readonly url: string;
  /** Fires (or keeps firing) the alerts until `endsAt` (default: an hour from now). */
  fire(alerts: LabAlert[], endsAt?: Date): Promise<void>;
  /** Resolves the alerts (endsAt now), as Prometheus does when they stop firing. */
  resolve(alerts: LabAlert[]): Promise<void>;
  silences(): Promise<LabSilence[]>;
  /** How many GET /api/v2/alerts Alertmanager has answered (its own metric): how often it was asked. */
  alertQueries(): Promise<number>;
  /** The active alerts Alertmanager holds, with their silenced-by IDs. */
  alerts(): Promise<{ labels: Record<string, string>; status: { state: string; silencedBy: string[] } }[]>;
  stop(): Promise<void>;
}

const CONFIG = ['route:', '  receiver: nowhere', 'receivers:', '  - name: nowhere', ''].join('\n');

export async function startAlertmanager(opts: { startTimeoutMs?: number } = {}): Promise<LabAlertmanager> {
  const binary = await alertmanagerBinary();
  const dir = makeLabDir('kangal-alertmanager');
  const configPath = join(dir.path, 'alertmanager.yml');
  writeFileSync(configPath, CONFIG);
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const proc = spawnManaged(
    'alertmanager',
    binary,
    [
      `--config.file=${configPath}`,
      `--storage.path=${join(dir.path, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
      // An empty address turns gossip clustering off (it would bind 0.0.0.0:9094).
      '--cluster.listen-address=',
      '--log.level=warn',
    ],
    {
      logPath: join(dir.path, 'alertmanager.log'),
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: dir.path },
      cwd: dir.path,
    },
  );
  const stop = async (): Promise<void> => {
    await proc.stop();
    dir.remove();
  };
  let exited = false;
  void proc.exited.then(() => {
    exited = true;
  });
  try {
    await waitFor(
      async () => {
        if (exited) throw new Error(`alertmanager exited:\n${proc.tail()}`);
        const res = await fetch(`${url}/-/ready`);
        await res.body?.cancel();
        return res.status === 200 ? true : undefined;
      },
      { timeoutMs: opts.startTimeoutMs ?? 20_000, intervalMs: 50, description: `alertmanager on ${url}` },
    );
  } catch (err) {
    await stop();
    throw new Error(`${err instanceof Error ? err.message : String(err)}\n${proc.tail()}`, { cause: err });
  }
  const api = async (method: string, path: string, body?: unknown): Promise<unknown> => {
    const res = await fetch(`${url}/api/v2${path}`, {
      method,
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`alertmanager ${method} ${path}: HTTP ${res.status}: ${text}`);
    return text === '' ? undefined : JSON.parse(text);
  };
  const post = (alerts: LabAlert[], endsAt: Date): Promise<unknown> =>
    api(
      'POST',
      '/alerts',
      alerts.map((a) => ({ labels: a.labels, annotations: a.annotations ?? {}, endsAt: endsAt.toISOString() })),
    );
  let stopped: Promise<void> | undefined;
  return {
    url,
    fire: async (alerts, endsAt = new Date(Date.now() + 3_600_000)) => {
      await post(alerts, endsAt);
    },
    resolve: async (alerts) => {
      await post(alerts, new Date());
    },
    silences: async () => (await api('GET', '/silences')) as LabSilence[],
    alertQueries: async () => {
      const text = await (await fetch(`${url}/metrics`)).text();
      const counts = [...text.matchAll(/^alertmanager_http_request_duration_seconds_count\{([^}]*)\} (\d+)/gm)].filter(
        (m) => /handler="\/api\/v2\/alerts"/.test(m[1] ?? '') && /method="get"/.test(m[1] ?? ''),
      );
      return counts.reduce((n, m) => n + Number(m[2]), 0);
    },
    alerts: async () => (await api('GET', '/alerts')) as Awaited<ReturnType<LabAlertmanager['alerts']>>,
    stop() {
      stopped ??= stop();
      return stopped;
    },
  };
}
