// Image reference parsing and the registry mirror flag, table-driven.
import assert from 'node:assert/strict';
import { parseImageReference, parseMirrorFlag } from '../../../controller/registry/index.js';

const SCHEMATIC = '376567988ad370138ad8b2698212367b8edcb69b5fd68c80be1f2ec7d603b4ba';
const DIGEST = `sha256:${'a'.repeat(64)}`;

describe('registry/reference', function () {
  const valid: [string, { host: string; repository: string; tag?: string; digest?: string; reference: string }][] = [
    [
      'ghcr.io/siderolabs/installer:v1.13.2',
      { host: 'ghcr.io', repository: 'siderolabs/installer', tag: 'v1.13.2', reference: 'v1.13.2' },
    ],
    [
      `factory.talos.dev/metal-installer/${SCHEMATIC}:v1.13.2`,
      { host: 'factory.talos.dev', repository: `metal-installer/${SCHEMATIC}`, tag: 'v1.13.2', reference: 'v1.13.2' },
    ],
    [
      `factory.talos.dev/aws-installer-secureboot/${SCHEMATIC}:v1.14.0-rc.1`,
      {
        host: 'factory.talos.dev',
        repository: `aws-installer-secureboot/${SCHEMATIC}`,
        tag: 'v1.14.0-rc.1',
        reference: 'v1.14.0-rc.1',
      },
    ],
    [
      '127.0.0.1:5000/siderolabs/installer:v1.10.1',
      { host: '127.0.0.1:5000', repository: 'siderolabs/installer', tag: 'v1.10.1', reference: 'v1.10.1' },
    ],
    ['localhost/a/b:c', { host: 'localhost', repository: 'a/b', tag: 'c', reference: 'c' }],
    ['[::1]:5000/a:b', { host: '[::1]:5000', repository: 'a', tag: 'b', reference: 'b' }],
    [
      'GHCR.IO/siderolabs/installer:v1',
      { host: 'ghcr.io', repository: 'siderolabs/installer', tag: 'v1', reference: 'v1' },
    ],
    [
      `ghcr.io/siderolabs/installer@${DIGEST}`,
      { host: 'ghcr.io', repository: 'siderolabs/installer', digest: DIGEST, reference: DIGEST },
    ],
    // A digest pins the content: it wins over the tag, as containerd does.
    [
      `ghcr.io/siderolabs/installer:v1.13.2@${DIGEST}`,
      { host: 'ghcr.io', repository: 'siderolabs/installer', tag: 'v1.13.2', digest: DIGEST, reference: DIGEST },
    ],
    [
      'registry.example.com:8443/team/sub.dir/my_image-x:1.0_rc',
      { host: 'registry.example.com:8443', repository: 'team/sub.dir/my_image-x', tag: '1.0_rc', reference: '1.0_rc' },
    ],
    ['docker.io/alpine:3', { host: 'docker.io', repository: 'library/alpine', tag: '3', reference: '3' }],
    [
      'index.docker.io/siderolabs/installer:v1',
      { host: 'docker.io', repository: 'siderolabs/installer', tag: 'v1', reference: 'v1' },
    ],
  ];
  for (const [text, want] of valid) {
    it(`parses ${text}`, function () {
      const got = parseImageReference(text);
      assert.ok(!(got instanceof Error), got instanceof Error ? got.message : '');
      assert.deepEqual({ ...got }, { tag: undefined, digest: undefined, ...want });
    });
  }

  const invalid: [string, RegExp][] = [
    ['', /empty/],
    ['siderolabs/installer:v1.13.2', /no registry host.*ghcr\.io\/siderolabs\/installer:v1\.13\.2/],
    ['installer:v1', /no registry host/],
    ['ghcr.io/siderolabs/installer', /no tag or digest/],
    ['ghcr.io/siderolabs/Installer:v1', /component "Installer" must be lowercase/],
    ['ghcr.io/siderolabs//installer:v1', /component ""/],
    ['ghcr.io/:v1', /component ""|no repository/],
    ['ghcr.io/siderolabs/installer:', /tag "" is not valid/],
    ['ghcr.io/siderolabs/installer:-v1', /tag "-v1" is not valid/],
    [`ghcr.io/siderolabs/installer:${'v'.repeat(129)}`, /is not valid/],
    ['ghcr.io/siderolabs/installer@sha256:abc', /digest "sha256:abc"/],
    [`ghcr.io/siderolabs/installer@sha256:${'a'.repeat(63)}`, /sha256 takes 64 hex digits, not 63/],
    [`ghcr.io/siderolabs/installer@sha256:${'A'.repeat(64)}`, /lowercase/],
    [`ghcr.io/a@${DIGEST}@${DIGEST}`, /more than one @digest/],
    ['ghcr.io:99999/a:b', /not a registry host/],
    ['-bad.example/a:b', /not a registry host/],
    [' ghcr.io/siderolabs/installer:v1', /whitespace/],
    ['ghcr.io/siderolabs/installer:v1\n', /whitespace/],
    [`ghcr.io/${'a'.repeat(250)}:v1`, /longer than 255/],
  ];
  for (const [text, want] of invalid) {
    it(`rejects ${JSON.stringify(text.length > 60 ? `${text.slice(0, 40)}…` : text)}`, function () {
      const got = parseImageReference(text);
      assert.ok(got instanceof Error, `expected an error, got ${JSON.stringify(got)}`);
      assert.match(got.message, want);
    });
  }
});

describe('registry/parseMirrorFlag', function () {
  const valid: [string, { host: string; url: string }][] = [
    ['ghcr.io=http://127.0.0.1:5000', { host: 'ghcr.io', url: 'http://127.0.0.1:5000' }],
    ['ghcr.io=http://127.0.0.1:5000/', { host: 'ghcr.io', url: 'http://127.0.0.1:5000' }],
    ['factory.talos.dev=https://mirror.example.com', { host: 'factory.talos.dev', url: 'https://mirror.example.com' }],
    ['GHCR.io=HTTPS://Mirror.Example.com:8443', { host: 'ghcr.io', url: 'https://mirror.example.com:8443' }],
    ['ghcr.io=http://localhost:5000', { host: 'ghcr.io', url: 'http://localhost:5000' }],
    ['ghcr.io=http://[::1]:5000', { host: 'ghcr.io', url: 'http://[::1]:5000' }],
    ['ghcr.io=http://127.1.2.3:5000', { host: 'ghcr.io', url: 'http://127.1.2.3:5000' }],
    ['127.0.0.1:5000=https://mirror.example.com', { host: '127.0.0.1:5000', url: 'https://mirror.example.com' }],
    [' ghcr.io = https://mirror.example.com ', { host: 'ghcr.io', url: 'https://mirror.example.com' }],
  ];
  for (const [text, want] of valid) {
    it(`accepts ${text}`, function () {
      assert.deepEqual(parseMirrorFlag(text), want);
    });
  }

  const invalid: [string, RegExp][] = [
    ['ghcr.io', /expected HOST=URL/],
    ['=https://mirror.example.com', /expected HOST=URL/],
    ['ghcr.io=', /expected HOST=URL/],
    ['ghcr.io=mirror.example.com', /is not a URL/],
    ['ghcr.io=http://mirror.example.com', /plain http is allowed only to loopback.*use https:\/\/mirror\.example\.com/],
    ['ghcr.io=http://10.0.0.5:5000', /plain http is allowed only to loopback/],
    ['ghcr.io=http://[::ffff:127.0.0.1]:5000', /plain http is allowed only to loopback/],
    ['ghcr.io=ftp://mirror.example.com', /must be https:\/\//],
    ['ghcr.io=https://mirror.example.com/ghcr', /only scheme:\/\/host\[:port\]/],
    ['ghcr.io=https://mirror.example.com/?x=1', /only scheme:\/\/host\[:port\]/],
    ['not a host=https://mirror.example.com', /is not a registry host/],
    ['ghcr.io/siderolabs=https://mirror.example.com', /is not a registry host/],
  ];
  for (const [text, want] of invalid) {
    it(`rejects ${text}`, function () {
      const got = parseMirrorFlag(text);
      assert.ok(got instanceof Error, `expected an error, got ${JSON.stringify(got)}`);
      assert.match(got.message, want);
    });
  }

  it('rejects credentials in the URL without repeating them', function () {
    const got = parseMirrorFlag('ghcr.io=https://bob:s3cret@mirror.example.com');
    assert.ok(got instanceof Error);
    assert.match(got.message, /credentials do not belong in the URL/);
    assert.doesNotMatch(got.message, /s3cret|bob/);
  });
});
