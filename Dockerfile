# syntax=docker/dockerfile:1
# kangal-patch controller image: `docker build -t kangal-patch .`
# Stage 1 compiles with the dev dependencies; the final stage has production dependencies and the
# compiled dist/ only (plus bin/kangal-patch.js, the package's entry, which loads dist/).

FROM node:20-bookworm-slim AS build
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts
COPY tsconfig.json tsconfig.build.json ./
COPY controller ./controller
COPY schemas ./schemas
COPY proto ./proto
RUN npm run build

FROM node:20-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts && npm cache clean --force

FROM node:20-bookworm-slim
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
