// --notify-config-file: the schema's errors name the file and the field, never a secret value; and
// `kangal-patch run` refuses to start on a bad file with that message.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseNotifyConfig } from '../../../controller/notify/config.js';
import { main } from '../../../controller/cli.js';

const SECRET = 'a-very-secret-hmac-key-0123456789';
const SLACK_URL = 'https://hooks.slack.com/services/T000/B000/XXXXSECRETPATH';

function errors(text: string): string[] {
  const r = parseNotifyConfig(text, '/etc/kangal-patch/notify/config.yaml');
  return 'errors' in r ? r.errors : [];
}

describe('notify config file', function () {
  it('accepts every receiver type with defaults filled in', function () {
    const r = parseNotifyConfig(
      `receivers:
  - { name: ops, type: webhook, url: "https://ops.example.com/hook", secret: "${SECRET}", events: [plan.failed, node.failed], plans: [prod] }
  - { name: chat, type: slack, url: "${SLACK_URL}" }
  - { name: teams, type: teams, url: "https://example.webhook.office.com/workflows/abc", timeout: 5s }
  - { name: discord, type: discord, url: "https://discord.com/api/webhooks/1/abc" }
`,
      'f.yaml',
    );
    assert.ok(!('errors' in r), JSON.stringify(r));
    assert.equal(r.queueSize, 1000);
    assert.equal(r.maxAttempts, 6);
    assert.deepEqual(
      r.receivers.map((x) => [x.name, x.type, x.timeout]),
      [
        ['ops', 'webhook', '10s'],
        ['chat', 'slack', '10s'],
        ['teams', 'teams', '5s'],
        ['discord', 'discord', '10s'],
      ],
    );
  });

  it('the example of docs/notifications.md is a valid file', function () {
    const page = readFileSync(new URL('../../../docs/notifications.md', import.meta.url), 'utf8');
    const section = page.slice(page.indexOf('# Notifications'));
    const example = /```yaml\n([\s\S]*?)```/.exec(section)?.[1];
    assert.ok(example, 'the Notifications page has a YAML example');
    const r = parseNotifyConfig(example, 'docs/notifications.md');
    assert.ok(!('errors' in r), JSON.stringify(r));
    assert.deepEqual(
      r.receivers.map((x) => x.type),
      ['webhook', 'slack'],
    );
  });

  it('names the file and the field of each problem', function () {
    const found = errors(`receivers:
  - { name: ops, type: webhook, url: "http://ops.example.com/hook", secret: short }
  - { name: ops, type: pager, url: "${SLACK_URL}", events: [plan.exploded] }
  - { name: chat, type: slack, url: "${SLACK_URL}", secret: "${SECRET}", timeout: 1h }
queueSize: 0
colour: red
`);
    const want = [
      /^\/etc\/kangal-patch\/notify\/config\.yaml: receivers\[0\]\.url: must be https:\/\/ \(plain http:\/\/ only for loopback\)$/,
      /^\/etc\/kangal-patch\/notify\/config\.yaml: receivers\[0\]\.secret: must be at least 16 characters$/,
      /: receivers\[1\]\.type: /,
      /: receivers\[1\]\.events\[0\]: /,
      /: receivers\[2\]\.timeout: must be between 100ms and 2m$/,
      /: queueSize: /,
      /: \(top level\): Unrecognized key: "colour"$/,
    ];
    for (const w of want)
      assert.ok(
        found.some((e) => w.test(e)),
        `${String(w)} in:\n${found.join('\n')}`,
      );
    // Refinements on a receiver run once its fields parse: a Slack receiver with a secret, two receivers with one name.
    const more = errors(`receivers:
  - { name: chat, type: slack, url: "${SLACK_URL}", secret: "${SECRET}" }
  - { name: chat, type: discord, url: "https://discord.com/api/webhooks/1/abc" }
`);
    assert.deepEqual(
      more.map((e) => e.replace(/^[^:]+: /, '')),
      [
        'receivers[0].secret: only a webhook receiver signs its bodies (Slack, Teams and Discord authenticate by their URL)',
        'receivers[1].name: "chat" is used twice',
      ],
    );
  });

  it('never repeats a URL or a secret in its messages', function () {
    const found = [
      ...errors(`receivers:\n  - { name: chat, type: slack, url: "${SLACK_URL}", secret: "${SECRET}" }\n`),
      ...errors(
        `receivers:\n  - { name: Bad Name, type: webhook, url: "${SLACK_URL}:notaport", secret: "${SECRET}" }\n`,
      ),
      ...errors(`receivers:\n  - name: ops\n    url: "${SLACK_URL}"\n    url: "${SLACK_URL}"\n`),
      ...errors(`receivers: [ { url: "${SLACK_URL}" `),
    ];
    assert.ok(found.length >= 4, found.join('\n'));
    for (const e of found) assert.ok(!e.includes('SECRETPATH') && !e.includes(SECRET), e);
  });

  it('kangal-patch run stops at start with the message (exit code 2)', async function () {
    const dir = mkdtempSync(join(tmpdir(), 'kp-notify-'));
    try {
      const file = join(dir, 'notify.yaml');
      writeFileSync(file, 'receivers:\n  - { name: ops, type: webhook, url: "ftp://x" }\n');
      let err = '';
      const code = await main(['run', '--notify-config-file', file, '--kubeconfig', join(dir, 'none')], {
        out: () => undefined,
        err: (t: string) => (err += t),
      });
      assert.equal(code, 2);
      assert.equal(
        err,
        `kangal-patch run: --notify-config-file (KANGAL_PATCH_NOTIFY_CONFIG_FILE): ${file}: receivers[0].url: must be https:// (plain http:// only for loopback)\n`,
      );
      let missing = '';
      assert.equal(
        await main(['run', '--notify-config-file', join(dir, 'absent.yaml')], {
          out: () => undefined,
          err: (t: string) => (missing += t),
        }),
        2,
      );
      assert.match(missing, /absent\.yaml: cannot be read \(ENOENT\)/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
