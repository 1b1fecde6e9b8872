// Decoding COSI resources (controller/talos/cosi.ts) from either spec Talos sends: the protobuf one,
// and the YAML fallback with upstream's own keys (the Go structs' yaml tags).
import assert from 'node:assert/strict';
import { stringify } from 'yaml';
import { decodeBootId } from '../../../controller/talos/cosi.js';
import { BootIDSpec } from '../../../proto/gen/resource/definitions/runtime/runtime.js';
import type { Resource } from '../../../proto/gen/v1alpha1/resource.js';

const resource = (spec: { protoSpec?: Uint8Array; yamlSpec?: string }): Resource =>
  ({
    metadata: undefined,
    spec: { protoSpec: spec.protoSpec ?? new Uint8Array(), yamlSpec: spec.yamlSpec ?? '' },
  }) as unknown as Resource;

describe('talos/cosi: decoding resources', function () {
  it('BootIDs: reads the boot ID from the protobuf spec', function () {
    assert.equal(decodeBootId(resource({ protoSpec: BootIDSpec.encode({ bootId: 'b-1' }).finish() })), 'b-1');
  });

  it("BootIDs: without a protobuf spec, reads the YAML spec by upstream's key `bootID` (runtime.BootIDSpec), not `bootId`", function () {
    assert.equal(decodeBootId(resource({ yamlSpec: stringify({ bootID: 'b-2' }) })), 'b-2');
    assert.equal(
      decodeBootId(resource({ yamlSpec: stringify({ bootId: 'b-3' }) })),
      '',
      'a key upstream never writes is no boot ID',
    );
  });
});
