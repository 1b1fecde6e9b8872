// The controller's RBAC keeps least privilege: checked on the source files of kustomize/ (the
// integration test checks the rendered output too), and the checker itself on bad examples.
import assert from 'node:assert/strict';
import { DEFAULT_HOOKS_NAMESPACE } from '../../../schemas/api.js';
import {
  HEALTH_SERVICE_ACCOUNT,
  manifestFiles,
  OPERATOR_NAMESPACE,
  rbacViolations,
  SERVICE_ACCOUNT,
  type K8sObject,
  type PolicyRule,
} from '../../support/manifests.js';

const role = (kind: 'Role' | 'ClusterRole', rules: PolicyRule[], namespace?: string): K8sObject => ({
  apiVersion: 'rbac.authorization.k8s.io/v1',
  kind,
  metadata: { name: 'r', ...(namespace ? { namespace } : {}) },
  rules,
});

describe('kustomize: RBAC least privilege', function () {
  const objects = manifestFiles('.').map((m) => m.object);
  const roles = objects.filter((o) => o.kind === 'Role' || o.kind === 'ClusterRole');
  const rulesOf = (kind: string, name: string, namespace?: string): PolicyRule[] =>
    (roles.find((o) => o.kind === kind && o.metadata.name === name && o.metadata.namespace === namespace)?.['rules'] as
      PolicyRule[] | undefined) ?? [];

  it('the checker catches wildcards, Secret writes, Secrets not named, escalate/bind/impersonate and ClusterRoles with Secrets', function () {
    const cases: [K8sObject, RegExp][] = [
      [role('ClusterRole', [{ apiGroups: [''], resources: ['pods'], verbs: ['*'] }]), /wildcard in verbs/],
      [role('ClusterRole', [{ apiGroups: ['*'], resources: ['pods'], verbs: ['get'] }]), /wildcard in apiGroups/],
      [role('ClusterRole', [{ apiGroups: [''], resources: ['pods/*'], verbs: ['get'] }]), /wildcard in resources/],
      [role('ClusterRole', [{ nonResourceURLs: ['/metrics*'], verbs: ['get'] }]), /wildcard in nonResourceURLs/],
      [
        role('Role', [{ apiGroups: [''], resources: ['secrets'], verbs: ['get', 'update'] }], OPERATOR_NAMESPACE),
        /Secret verb update/,
      ],
      [
        role('Role', [{ apiGroups: [''], resources: ['secrets'], verbs: ['create'] }], OPERATOR_NAMESPACE),
        /Secret verb create/,
      ],
      [
        role('Role', [{ apiGroups: [''], resources: ['secrets'], verbs: ['list', 'watch'] }], 'kube-system'),
        /outside the operator namespace/,
      ],
      [
        role('Role', [{ apiGroups: [''], resources: ['secrets'], verbs: ['get'] }], 'kube-system'),
        /outside the operator namespace/,
      ],
      [
        role('ClusterRole', [{ apiGroups: [''], resources: ['secrets'], verbs: ['get'] }]),
        /a ClusterRole grants Secrets/,
      ],
      [
        role('ClusterRole', [
          { apiGroups: ['rbac.authorization.k8s.io'], resources: ['clusterroles'], verbs: ['escalate'] },
        ]),
        /verb escalate/,
      ],
      [
        role('ClusterRole', [
          { apiGroups: ['rbac.authorization.k8s.io'], resources: ['rolebindings'], verbs: ['bind'] },
        ]),
        /verb bind/,
      ],
      [
        role('ClusterRole', [{ apiGroups: [''], resources: ['serviceaccounts'], verbs: ['impersonate'] }]),
        /verb impersonate/,
      ],
      [
        role('Role', [{ apiGroups: [''], resources: ['serviceaccounts'], verbs: ['impersonate'] }], OPERATOR_NAMESPACE),
        /verb impersonate/,
      ],
      [
        role(
          'Role',
          [
            {
              apiGroups: [''],
              resources: ['serviceaccounts'],
              resourceNames: [SERVICE_ACCOUNT],
              verbs: ['impersonate'],
            },
          ],
          OPERATOR_NAMESPACE,
        ),
        /verb impersonate/,
      ],
      [
        role('ClusterRole', [
          {
            apiGroups: [''],
            resources: ['serviceaccounts'],
            resourceNames: [HEALTH_SERVICE_ACCOUNT],
            verbs: ['impersonate'],
          },
        ]),
        /verb impersonate/,
      ],
      [
        role(
          'Role',
          [{ apiGroups: [''], resources: ['users'], resourceNames: [HEALTH_SERVICE_ACCOUNT], verbs: ['impersonate'] }],
          OPERATOR_NAMESPACE,
        ),
        /verb impersonate/,
      ],
    ];
    for (const [object, expected] of cases)
      assert.match(rbacViolations([object]).join('\n'), expected, JSON.stringify(object));
    assert.match(
      rbacViolations([
        role(
          'Role',
          [{ apiGroups: [''], resources: ['secrets'], verbs: ['get', 'list', 'watch'] }],
          OPERATOR_NAMESPACE,
        ),
      ]).join('\n'),
      /Secrets without resourceNames/,
    );
    assert.deepEqual(
      rbacViolations([
        role(
          'Role',
          [
            {
              apiGroups: [''],
              resources: ['secrets'],
              resourceNames: ['talos-credentials'],
              verbs: ['get', 'list', 'watch'],
            },
          ],
          OPERATOR_NAMESPACE,
        ),
      ]),
      [],
    );
    const identity: K8sObject = {
      apiVersion: 'v1',
      kind: 'ServiceAccount',
      metadata: {
        name: HEALTH_SERVICE_ACCOUNT,
        namespace: OPERATOR_NAMESPACE,
        labels: { 'app.kubernetes.io/component': 'health-checks' },
      },
      automountServiceAccountToken: false,
    };
    const impersonate = role(
      'Role',
      [
        {
          apiGroups: [''],
          resources: ['serviceaccounts'],
          resourceNames: [HEALTH_SERVICE_ACCOUNT],
          verbs: ['impersonate'],
        },
      ],
      OPERATOR_NAMESPACE,
    );
    assert.deepEqual(rbacViolations([identity, impersonate]), [], 'the health-check identity, by name');
    assert.match(
      rbacViolations([impersonate]).join('\n'),
      /verb impersonate/,
      'a ServiceAccount that is not a health-check identity',
    );
    assert.match(
      rbacViolations([{ ...identity, automountServiceAccountToken: true }, impersonate]).join('\n'),
      /verb impersonate/,
      'one whose token pods can mount',
    );
  });

  it('health checks read as their own ServiceAccount: the controller may impersonate it and nothing else, and it holds no grant', function () {
    const impersonations = roles.flatMap((o) =>
      ((o['rules'] as PolicyRule[] | undefined) ?? [])
        .filter((r) => r.verbs.includes('impersonate'))
        .map((r) => ({ o, r })),
    );
    assert.deepEqual(
      impersonations.map(({ o, r }) => [o.kind, o.metadata.namespace, r.resources, r.resourceNames]),
      [['Role', OPERATOR_NAMESPACE, ['serviceaccounts'], [HEALTH_SERVICE_ACCOUNT]]],
    );
    const sa = objects.find((o) => o.kind === 'ServiceAccount' && o.metadata.name === HEALTH_SERVICE_ACCOUNT);
    assert.equal(sa?.metadata.namespace, OPERATOR_NAMESPACE);
    assert.equal(sa?.['automountServiceAccountToken'], false);
    const bindings = objects.filter((o) => o.kind === 'RoleBinding' || o.kind === 'ClusterRoleBinding');
    assert.ok(
      !bindings.some((b) => JSON.stringify(b['subjects']).includes(HEALTH_SERVICE_ACCOUNT)),
      'the install grants it nothing: the operator grants what the checks read',
    );
  });

  it('no file under kustomize/ breaks least privilege', function () {
    assert.ok(roles.length >= 4, `found ${roles.length} roles`);
    assert.deepEqual(rbacViolations(objects), []);
  });

  it('Secrets: read only (get, and list/watch for the field-selected watch on the Talos Secret), in the operator namespace only, pinned by name (the Talos credentials Secrets the install names)', function () {
    const grants = roles.flatMap((o) =>
      ((o['rules'] as PolicyRule[] | undefined) ?? [])
        .filter((r) => r.resources?.includes('secrets'))
        .map((r) => ({ o, r })),
    );
    assert.equal(grants.length, 1);
    assert.equal(grants[0]?.o.kind, 'Role');
    assert.equal(grants[0]?.o.metadata.namespace, OPERATOR_NAMESPACE);
    assert.deepEqual(grants[0]?.r.verbs, ['get', 'list', 'watch']);
    assert.deepEqual(grants[0]?.r.resourceNames, ['talos-credentials']);
  });

  it('the controller ClusterRole holds exactly the cluster-wide verbs the code uses', function () {
    const grants = (rules: PolicyRule[]): string[] =>
      rules
        .flatMap((r) =>
          (r.resources ?? r.nonResourceURLs ?? []).flatMap((res) =>
            r.verbs.map((v) => `${(r.apiGroups ?? [])[0] ?? 'url'}/${res}:${v}`),
          ),
        )
        .sort();
    assert.deepEqual(
      grants(rulesOf('ClusterRole', 'kangal-patch-controller')),
      [
        '/nodes:get',
        '/nodes:list',
        '/nodes:patch',
        '/nodes:watch',
        '/pods/eviction:create',
        '/pods:delete',
        '/pods:get',
        '/pods:list',
        '/pods:watch',
        ...['create', 'delete', 'get', 'list', 'patch', 'update', 'watch'].map(
          (v) => `kangalpatch.ozalp.dk/patchjobs:${v}`,
        ),
        ...['get', 'patch', 'update'].map((v) => `kangalpatch.ozalp.dk/patchjobs/status:${v}`),
        ...['create', 'delete', 'get', 'list', 'patch', 'update', 'watch'].map(
          (v) => `kangalpatch.ozalp.dk/patchplans:${v}`,
        ),
        'kangalpatch.ozalp.dk/patchplans/finalizers:update',
        ...['get', 'patch', 'update'].map((v) => `kangalpatch.ozalp.dk/patchplans/status:${v}`),
        'policy/poddisruptionbudgets:list',
        'policy/poddisruptionbudgets:watch',
        'storage.k8s.io/volumeattachments:list',
        'storage.k8s.io/volumeattachments:watch',
        'url//readyz:get',
      ].sort(),
    );
    assert.deepEqual(grants(rulesOf('Role', 'kangal-patch-controller', 'kube-system')), [
      'apps/daemonsets:get',
      'apps/daemonsets:list',
      'apps/daemonsets:watch',
    ]);
    assert.deepEqual(grants(rulesOf('Role', 'kangal-patch-controller-events', 'default')), [
      'events.k8s.io/events:create',
    ]);
  });

  it('Jobs only in the hooks namespace: never in the operator namespace beside the Secrets, never cluster-wide', function () {
    const jobGrants = roles.flatMap((o) =>
      ((o['rules'] as PolicyRule[] | undefined) ?? [])
        .filter((r) => r.resources?.includes('jobs'))
        .map((r) => ({ o, r })),
    );
    assert.deepEqual(
      jobGrants.map(({ o, r }) => [o.kind, o.metadata.namespace, r.apiGroups, r.verbs]),
      [['Role', DEFAULT_HOOKS_NAMESPACE, ['batch'], ['get', 'list', 'watch', 'create', 'delete']]],
    );
    assert.deepEqual(
      rulesOf('Role', 'kangal-patch-controller', OPERATOR_NAMESPACE)
        .flatMap((r) => r.resources ?? [])
        .sort(),
      ['leases', 'secrets'],
    );
  });

  it('every binding gives its role to the controller ServiceAccount only', function () {
    const bindings = objects.filter((o) => o.kind === 'RoleBinding' || o.kind === 'ClusterRoleBinding');
    assert.equal(bindings.length, 6);
    for (const b of bindings) {
      assert.deepEqual(
        b['subjects'],
        [{ kind: 'ServiceAccount', name: SERVICE_ACCOUNT, namespace: OPERATOR_NAMESPACE }],
        `${b.kind} ${b.metadata.name}`,
      );
      const ref = b['roleRef'] as { kind: string; name: string };
      assert.ok(
        roles.some(
          (r) =>
            r.kind === ref.kind &&
            r.metadata.name === ref.name &&
            (ref.kind === 'ClusterRole' || r.metadata.namespace === b.metadata.namespace),
        ),
        `${b.kind} ${b.metadata.name} refers to a role here`,
      );
    }
  });

  it('kangal-patch-viewer is read-only on plans and jobs and aggregated to view', function () {
    const viewer = roles.find((o) => o.metadata.name === 'kangal-patch-viewer');
    assert.equal(viewer?.metadata.labels?.['rbac.authorization.k8s.io/aggregate-to-view'], 'true');
    assert.deepEqual(viewer?.['rules'], [
      { apiGroups: ['kangalpatch.ozalp.dk'], resources: ['patchplans', 'patchjobs'], verbs: ['get', 'list', 'watch'] },
    ]);
  });
});
