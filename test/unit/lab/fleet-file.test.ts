// `lab up --fleet <file>`: a fleet file is checked before anything starts, with messages that name
// the file and the field.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readFleetFile } from '../../lab/fleet/file.js';
import { describeFleet, VANILLA_SCHEMATIC } from '../../lab/fleet/describe.js';

describe('lab fleet file', () => {
  let dir: string;
  before(() => (dir = mkdtempSync(join(tmpdir(), 'fleet-file-'))));
  after(() => rmSync(dir, { recursive: true, force: true }));
  const write = (text: string): string => {
    const path = join(dir, `fleet-${Math.random().toString(36).slice(2)}.yaml`);
    writeFileSync(path, text);
    return path;
  };
  const node = (extra = ''): string =>
    `- name: cp-1\n  role: controlplane\n  talosVersion: "v1.12.4"\n  kubernetesVersion: "v1.35.2"\n  schematic: "${VANILLA_SCHEMATIC}"\n  internalIP: 127.30.0.1\n${extra}`;

  it('reads a valid fleet', () => {
    const [cp] = readFleetFile(write(node('  labels: {zone: a}\n')));
    assert.deepEqual(cp?.labels, { zone: 'a' });
    assert.equal(cp?.internalIP, '127.30.0.1');
  });

  it('refuses a non-loopback address, naming the file and field', () => {
    const path = write(node().replace('127.30.0.1', '10.0.0.5'));
    assert.throws(
      () => readFleetFile(path),
      new RegExp(`^Error: ${path}: 0\\.internalIP: lab nodes use loopback addresses`),
    );
  });

  it('refuses an unquoted version and unknown fields', () => {
    const path = write(node().replace('"v1.12.4"', '1.12') + '  zone: a\n');
    assert.throws(
      () => readFleetFile(path),
      (err: Error) => /0\.talosVersion: /.test(err.message) && /Unrecognized key: "zone"/i.test(err.message),
    );
  });

  it('describeFleet gives unique loopback addresses and names', () => {
    const nodes = describeFleet({ nodes: 600, controlPlanes: 3, subnet: 40 });
    assert.equal(new Set(nodes.map((n) => n.internalIP)).size, 600);
    assert.equal(new Set(nodes.map((n) => n.name)).size, 600);
    assert.ok(nodes.every((n) => n.internalIP.startsWith('127.40.')));
    assert.deepEqual(
      nodes.slice(0, 4).map((n) => n.role),
      ['controlplane', 'controlplane', 'controlplane', 'worker'],
    );
  });
});
