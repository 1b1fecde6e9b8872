// The write methods of the COSI State service (cosi-project/specification proto/v1alpha1/state.proto:
// Create, Update, Destroy), which the product's proto leaves out as it never writes: Talos serves
// them and refuses every write. The requests are read only as far as upstream's COSI server reads
// them before the access policy answers (cosi-project/runtime pkg/state/protobuf/server/server.go):
// Create and Update unmarshal the resource they carry first (pkg/resource/protobuf/resource.go
// Unmarshal: "metadata is missing", "spec is missing"); Destroy carries none.
import type * as grpc from '@grpc/grpc-js';
import { BinaryReader } from '@bufbuild/protobuf/wire';
import { Resource } from '../../../proto/gen/v1alpha1/resource.js';

/** A COSI write as the server has read it: for Create and Update, why the resource they carry does not unmarshal (undefined: it does). */
export interface CosiWrite {
  unreadable: string | undefined;
}

/** Reads the resource in field `field` (CreateRequest.resource = 1, UpdateRequest.new_resource = 2); 0: the request carries none. */
function readWrite(field: number): (buf: Buffer) => CosiWrite {
  return (buf) => {
    if (field === 0) return { unreadable: undefined };
    const reader = new BinaryReader(buf);
    let resource: Resource | undefined;
    while (reader.pos < reader.len) {
      const tag = reader.uint32();
      if (tag === ((field << 3) | 2)) resource = Resource.decode(reader, reader.uint32());
      else reader.skip(tag & 7);
    }
    if (!resource?.metadata) return { unreadable: 'metadata is missing' };
    if (!resource.spec) return { unreadable: 'spec is missing' };
    return { unreadable: undefined };
  };
}

function method(name: string, field: number): grpc.MethodDefinition<CosiWrite, Record<string, never>> {
  return {
    path: `/cosi.resource.State/${name}`,
    requestStream: false,
    responseStream: false,
    requestSerialize: () => Buffer.alloc(0),
    requestDeserialize: readWrite(field),
    responseSerialize: () => Buffer.alloc(0),
    responseDeserialize: () => ({}),
  };
}

export const COSI_WRITES = {
  create: method('Create', 1),
  update: method('Update', 2),
  destroy: method('Destroy', 0),
} satisfies grpc.ServiceDefinition;
