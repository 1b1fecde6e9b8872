#!/usr/bin/env bash
# Regenerates proto/gen/ from the .proto files here (run via `npm run generate:proto`).
# Needs Debian's protoc (`apt-get install protobuf-compiler`) and the ts-proto devDependency.
set -euo pipefail
cd "$(dirname "$0")"
# An output directory other than gen/ serves the freshness test (test/unit/proto/generated.test.ts).
OUT=${1:-gen}
rm -rf "$OUT"
mkdir -p "$OUT"
protoc \
  --plugin=protoc-gen-ts_proto="$PWD/../node_modules/.bin/protoc-gen-ts_proto" \
  --ts_proto_out="$OUT" \
  --ts_proto_opt=outputServices=grpc-js,esModuleInterop=true,importSuffix=.js,forceLong=number,useDate=true,env=node,useExactTypes=false,outputJsonMethods=false,outputPartialMethods=true,useJsTypeOverride=true \
  -I . -I /usr/include \
  $(find . -path ./gen -prune -o -name '*.proto' -print | sort)
