// What a hook may be given against the operator's allowlists (controller/core/hook-policy.ts), what
// the controller adds to every hook pod, the hook decision refusing a hook before any Job exists,
// and the preflight check HookAdmission naming the field and the flag to change.
import assert from 'node:assert/strict';
import { hookSpec, type HookSpec } from '../../../schemas/hooks.js';
import {
  DEFAULT_HOOK_POLICY,
  hookPodSecurity,
  hookViolations,
  imageAllowed,
  imageRepository,
  planHookViolations,
  registryEntry,
  type HookPolicy,
} from '../../../controller/core/hook-policy.js';
import { decideHook, hookJobName } from '../../../controller/core/hooks.js';
import { hookAdmission } from '../../../controller/preflight/checks.js';
import { readFileSync } from 'node:fs';
import { loadPlanSources } from '../../../controller/gitops/load/index.js';
import { repoRoot } from '../../support/manifests.js';

const T0 = Date.parse('2026-12-01T10:00:00Z');
const hook = (spec: Record<string, unknown> = {}, image = 'ghcr.io/acme/tools:1.0'): HookSpec =>
  hookSpec.parse({ template: { spec: { containers: [{ name: 'c', image }], ...spec } }, timeout: '2m' });
const policy = (over: Partial<HookPolicy> = {}): HookPolicy => ({ ...DEFAULT_HOOK_POLICY, ...over });

describe('core/hook-policy', function () {
  describe('hookViolations', function () {
    const cases: { name: string; spec: HookSpec; policy: HookPolicy; refused: [path: string, message: RegExp][] }[] = [
      { name: 'no serviceAccountName: the default one, always', spec: hook(), policy: policy(), refused: [] },
      {
        name: 'default named explicitly',
        spec: hook({ serviceAccountName: 'default' }),
        policy: policy(),
        refused: [],
      },
      {
        name: 'an allowlisted ServiceAccount',
        spec: hook({ serviceAccountName: 'ceph-noout' }),
        policy: policy({ serviceAccounts: ['ceph-noout'] }),
        refused: [],
      },
      {
        name: 'a ServiceAccount not allowlisted (empty allowlist)',
        spec: hook({ serviceAccountName: 'ceph-noout' }),
        policy: policy(),
        refused: [
          [
            'spec.hooks.preNode.template.spec.serviceAccountName',
            /^ServiceAccount ceph-noout is not allowed for hooks \(none are allowed\): add it to --hook-service-accounts \(chart value hooks.serviceAccounts\), or omit serviceAccountName$/,
          ],
        ],
      },
      {
        name: 'a ServiceAccount outside the allowlist',
        spec: hook({ serviceAccountName: 'admin' }),
        policy: policy({ serviceAccounts: ['ceph-noout'] }),
        refused: [
          [
            'spec.hooks.preNode.template.spec.serviceAccountName',
            /\(allowed: ceph-noout\): add it to --hook-service-accounts/,
          ],
        ],
      },
      {
        name: "the controller's own ServiceAccount, even allowlisted",
        spec: hook({ serviceAccountName: 'kangal-patch-controller' }),
        policy: policy({ serviceAccounts: ['kangal-patch-controller'] }),
        refused: [
          [
            'spec.hooks.preNode.template.spec.serviceAccountName',
            /^ServiceAccount kangal-patch-controller is the controller's own name: hooks never run as it/,
          ],
        ],
      },
      {
        name: "the controller's own ServiceAccount under a chart release name",
        spec: hook({ serviceAccountName: 'prod-kangal-patch-controller' }),
        policy: policy({ controllerServiceAccount: 'prod-kangal-patch-controller' }),
        refused: [['spec.hooks.preNode.template.spec.serviceAccountName', /the controller's own name/]],
      },
      {
        name: 'a priorityClassName with none allowed names the flag',
        spec: hook({ priorityClassName: 'batch-low' }),
        policy: policy(),
        refused: [
          [
            'spec.hooks.preNode.template.spec.priorityClassName',
            /^PriorityClass batch-low is not allowed for hooks \(none are allowed\): add it to --hook-priority-classes \(chart value hooks.priorityClasses\)/,
          ],
        ],
      },
      {
        name: 'system-node-critical, not allowlisted',
        spec: hook({ priorityClassName: 'system-node-critical' }),
        policy: policy({ priorityClasses: ['batch-low'] }),
        refused: [['spec.hooks.preNode.template.spec.priorityClassName', /system PriorityClass lets the hook preempt/]],
      },
      {
        name: 'system-cluster-critical, allowlisted',
        spec: hook({ priorityClassName: 'system-cluster-critical' }),
        policy: policy({ priorityClasses: ['system-cluster-critical'] }),
        refused: [],
      },
      {
        name: 'any image without a registry allowlist',
        spec: hook({}, 'evil.example/miner:latest'),
        policy: policy(),
        refused: [],
      },
      {
        name: 'an image under an allowed path',
        spec: hook({}, 'ghcr.io/acme/tools:1.0'),
        policy: policy({ imageRegistries: ['ghcr.io/acme'] }),
        refused: [],
      },
      {
        name: 'an image of a look-alike path',
        spec: hook({}, 'ghcr.io/acme-evil/tools:1.0'),
        policy: policy({ imageRegistries: ['ghcr.io/acme'] }),
        refused: [
          [
            'spec.hooks.preNode.template.spec.containers[0].image',
            /^image ghcr.io\/acme-evil\/tools:1.0 is not from an allowed registry \(ghcr.io\/acme\): use an image from one of them, or add its registry to --hook-image-registries \(chart value hooks.imageRegistries\)$/,
          ],
        ],
      },
      {
        name: 'a Docker Hub short name against a private registry',
        spec: hook({}, 'busybox:1.37'),
        policy: policy({ imageRegistries: ['registry.example.com'] }),
        refused: [['spec.hooks.preNode.template.spec.containers[0].image', /not from an allowed registry/]],
      },
    ];
    for (const c of cases) {
      it(c.name, function () {
        const v = hookViolations('preNode', c.spec, c.policy);
        assert.equal(v.length, c.refused.length, JSON.stringify(v));
        c.refused.forEach(([path, message], i) => {
          assert.equal(v[i]?.path, path);
          assert.match(v[i]?.message ?? '', message);
        });
      });
    }

    it('checks every hook of a plan, in hook order, each at its own path', function () {
      const hooks = { postPlan: hook({ serviceAccountName: 'x' }), prePlan: hook({ priorityClassName: 'p' }) };
      assert.deepEqual(
        planHookViolations(hooks, policy()).map((v) => v.path),
        ['spec.hooks.prePlan.template.spec.priorityClassName', 'spec.hooks.postPlan.template.spec.serviceAccountName'],
      );
      assert.deepEqual(planHookViolations(undefined, policy()), []);
    });
  });

  describe('image registries', function () {
    const repos: [string, string | undefined][] = [
      ['busybox', 'docker.io/library/busybox'],
      ['busybox:1.37', 'docker.io/library/busybox'],
      ['bitnami/kubectl:1.35', 'docker.io/bitnami/kubectl'],
      ['index.docker.io/library/busybox', 'docker.io/library/busybox'],
      ['GHCR.io/acme/tools@sha256:' + 'a'.repeat(64), 'ghcr.io/acme/tools'],
      ['registry.example.com:5000/ops/noout:v1', 'registry.example.com:5000/ops/noout'],
      ['localhost/tools', 'localhost/tools'],
      ['ghcr.io/acme/../evil', undefined],
      ['ghcr.io/ACME/tools', undefined],
      ['', undefined],
    ];
    for (const [image, repo] of repos)
      it(`${JSON.stringify(image)} is ${repo ?? 'not an image reference'}`, () =>
        assert.equal(imageRepository(image), repo));

    it('matches hosts and path prefixes on / boundaries, never a look-alike; an unparsable image never', function () {
      const allowed = ['ghcr.io/acme', 'registry.example.com', 'docker.io/library'];
      for (const ok of [
        'ghcr.io/acme/tools:1',
        'ghcr.io/acme/team/tool',
        'registry.example.com/anything/x',
        'busybox:1.37',
      ])
        assert.equal(imageAllowed(ok, allowed), true, ok);
      for (const no of [
        'ghcr.io/acmeevil/x',
        'ghcr.io/other/x',
        'registry.example.com.evil.io/x',
        'registry.example.com:5000/x',
        'bitnami/kubectl',
        'ghcr.io/acme/../x',
      ])
        assert.equal(imageAllowed(no, allowed), false, no);
    });

    it('reads allowlist entries: lowercase host, Docker Hub aliases, no tag or digest', function () {
      assert.equal(registryEntry('GHCR.io/acme/'), 'ghcr.io/acme');
      assert.equal(registryEntry('index.docker.io/library'), 'docker.io/library');
      assert.ok(registryEntry('ghcr.io/acme:1.0') instanceof Error);
      assert.ok(registryEntry('https://ghcr.io') instanceof Error);
    });
  });

  describe('hookPodSecurity', function () {
    const table: { name: string; spec: HookSpec; policy: HookPolicy; sa: string; token: boolean; user: number }[] = [
      {
        name: 'no ServiceAccount: default, no token, nobody',
        spec: hook(),
        policy: policy(),
        sa: 'default',
        token: false,
        user: 65534,
      },
      {
        name: 'default is not granted a token unless allowlisted',
        spec: hook({ serviceAccountName: 'default' }),
        policy: policy(),
        sa: 'default',
        token: false,
        user: 65534,
      },
      {
        name: 'an allowlisted ServiceAccount gets its token',
        spec: hook({ serviceAccountName: 'ceph-noout' }),
        policy: policy({ serviceAccounts: ['ceph-noout'] }),
        sa: 'ceph-noout',
        token: true,
        user: 65534,
      },
      {
        name: 'a ServiceAccount outside the allowlist never gets a token',
        spec: hook({ serviceAccountName: 'admin' }),
        policy: policy({ serviceAccounts: ['ceph-noout'] }),
        sa: 'admin',
        token: false,
        user: 65534,
      },
      {
        name: "the controller's name never gets a token",
        spec: hook({ serviceAccountName: 'kangal-patch-controller' }),
        policy: policy({ serviceAccounts: ['kangal-patch-controller'] }),
        sa: 'kangal-patch-controller',
        token: false,
        user: 65534,
      },
      {
        name: 'the template chooses the non-root user',
        spec: hook({ securityContext: { runAsUser: 2000 } }),
        policy: policy(),
        sa: 'default',
        token: false,
        user: 2000,
      },
    ];
    for (const c of table) {
      it(c.name, function () {
        const s = hookPodSecurity(c.spec, c.policy);
        assert.deepEqual(
          [s.serviceAccountName, s.automountServiceAccountToken, s.pod.runAsUser],
          [c.sa, c.token, c.user],
        );
        assert.deepEqual(s.pod, {
          runAsNonRoot: true,
          runAsUser: c.user,
          runAsGroup: 65534,
          seccompProfile: { type: 'RuntimeDefault' },
        });
        assert.deepEqual(s.container, {
          allowPrivilegeEscalation: false,
          privileged: false,
          runAsNonRoot: true,
          capabilities: { drop: ['ALL'] },
          seccompProfile: { type: 'RuntimeDefault' },
        });
      });
    }
  });

  describe('decideHook with the policy', function () {
    const input = (spec: HookSpec, p: HookPolicy | undefined) => ({
      hook: 'preNode' as const,
      spec,
      record: undefined,
      job: undefined,
      now: T0,
      policy: p,
      request: {
        name: hookJobName('plan-w1', 'preNode'),
        hook: 'preNode' as const,
        spec,
        labels: {},
        env: {},
        owner: { kind: 'PatchJob' as const, name: 'plan-w1', uid: 'u' },
      },
    });

    it('a refused hook fails at once with HookRefused, naming the field and the flag, and no Job is ever asked for', function () {
      const p = decideHook(input(hook({ serviceAccountName: 'kangal-patch-controller' }), undefined));
      assert.equal(p.state, 'failed');
      assert.equal(p.state === 'failed' && p.reason, 'HookRefused');
      assert.equal(p.record.phase, 'Failed');
      assert.match(
        p.state === 'failed' ? p.message : '',
        /^preNode hook refused, no Job was created: spec\.hooks\.preNode\.template\.spec\.serviceAccountName: ServiceAccount kangal-patch-controller is the controller's own name/,
      );
    });

    it("an admitted hook's Job carries the pod security of the policy", function () {
      const spec = hook({ serviceAccountName: 'ceph-noout' });
      const p = policy({ serviceAccounts: ['ceph-noout'] });
      const first = decideHook(input(spec, p));
      const create = decideHook({ ...input(spec, p), record: first.record, now: T0 + 10 });
      assert.equal(create.state, 'running');
      const job = create.state === 'running' ? create.create : undefined;
      assert.deepEqual([job?.pod.serviceAccountName, job?.pod.automountServiceAccountToken], ['ceph-noout', true]);
    });

    it('a policy narrowed after the hook was recorded refuses it before its Job is created', function () {
      const spec = hook({ serviceAccountName: 'ceph-noout' });
      const first = decideHook(input(spec, policy({ serviceAccounts: ['ceph-noout'] })));
      assert.equal(first.state, 'running');
      const later = decideHook({ ...input(spec, policy()), record: first.record, now: T0 + 10 });
      assert.equal(later.state, 'failed');
      assert.equal(later.record.reason, 'HookRefused');
    });
  });

  describe('preflight HookAdmission', function () {
    it('fails naming each refused field and the flag to change; passes within the allowlists', function () {
      const hooks = {
        preNode: hook({ serviceAccountName: 'ceph-noout' }),
        postNode: hook({ priorityClassName: 'system-node-critical' }),
      };
      const refused = hookAdmission(hooks, policy());
      assert.equal(refused.name, 'HookAdmission');
      assert.equal(refused.passed, false);
      assert.match(
        refused.message,
        /^2 hook setting\(s\) the operator does not allow: spec\.hooks\.preNode\.template\.spec\.serviceAccountName: .*--hook-service-accounts.*; spec\.hooks\.postNode\.template\.spec\.priorityClassName: .*--hook-priority-classes/,
      );
      const ok = hookAdmission(
        hooks,
        policy({ serviceAccounts: ['ceph-noout'], priorityClasses: ['system-node-critical'] }),
      );
      assert.equal(ok.passed, true, ok.message);
    });

    it('the Ceph noout example of docs/hooks.md passes once its ServiceAccount is allowlisted (also with registry.k8s.io as the only registry), and not before', function () {
      const loaded = loadPlanSources([
        { file: 'hooks-ceph-noout.yaml', content: readFileSync(`${repoRoot}/examples/hooks-ceph-noout.yaml`, 'utf8') },
      ]);
      const hooks = loaded.plans[0]?.plan.spec.hooks;
      assert.ok(hooks, JSON.stringify(loaded.problems));
      assert.equal(
        hookAdmission(hooks, policy({ serviceAccounts: ['ceph-noout'], imageRegistries: ['registry.k8s.io'] })).passed,
        true,
      );
      const before = hookAdmission(hooks, policy());
      assert.equal(before.passed, false);
      assert.match(before.message, /ServiceAccount ceph-noout is not allowed for hooks/);
      const pod = hookPodSecurity(hooks.preNode ?? assert.fail(), policy({ serviceAccounts: ['ceph-noout'] }));
      assert.deepEqual(
        [pod.serviceAccountName, pod.automountServiceAccountToken],
        ['ceph-noout', true],
        'kubectl in the hook gets the token it needs',
      );
    });
  });
});
