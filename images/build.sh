#!/usr/bin/env bash
# Builds one image from the repository's Dockerfile, unchanged:
#   images/build.sh service|spark TAG
# With a Docker engine: `docker build`. Without one: buildah (chroot isolation, vfs storage, so
# no daemon, no overlay mounts, no user namespaces needed). Its base is PYTHON_IMAGE when the
# storage holds it, else a stand-in made from Debian packages (images/base.sh). pip inside the
# build needs no index and no CA: the wheels are built here by the host's pip (its index, its
# proxy CA, its cache), mounted read-only into the build and installed with --no-index; apt's
# packages likewise (fetched by a container of the base). The build itself runs with no network,
# and a mount is never part of a layer.
# Environment: PYTHON_IMAGE (default: the Dockerfile's), PAFKA_IMAGES_DIR (cache, default
# build/images), CONTAINERS_STORAGE_CONF (buildah/podman storage; vfs is forced either way).
set -euo pipefail
cd "$(dirname "$0")/.."
kind=$1
tag=$2
case "$kind" in
  service) target=runtime ;;
  spark) target=spark ;;
  *) echo "usage: $0 service|spark TAG" >&2; exit 2 ;;
esac
default_base=$(sed -n 's/^ARG PYTHON_IMAGE=//p' Dockerfile)
base=${PYTHON_IMAGE:-$default_base}
cache=${PAFKA_IMAGES_DIR:-build/images}
mkdir -p "$cache" && cache=$(cd "$cache" && pwd)
started=$(date +%s)

if docker info >/dev/null 2>&1; then
  docker build --build-arg "PYTHON_IMAGE=$base" --target "$target" -t "$tag" .
  echo "built $tag with docker in $(($(date +%s) - started))s"
  exit 0
fi

python=${PYTHON:-python3}
if ! podman --storage-driver vfs image exists "$base"; then
  base=localhost/pafka-base:bookworm-py3.11
  podman --storage-driver vfs image exists "$base" || images/base.sh "$cache" "$base"
fi

# Wheels of every dependency (the spark extra included) for this pyproject.toml, plus the build
# backend pip's isolated build of pafka itself needs; pafka's own wheel is built in the image.
key=$(cat pyproject.toml | sha256sum | cut -c1-16)
wheels="$cache/wheels-$key"
if [ ! -d "$wheels" ]; then
  rm -rf "$wheels.partial"
  "$python" -m pip wheel -q --wheel-dir "$wheels.partial" '.[spark]' 'setuptools>=68' wheel
  rm -f "$wheels.partial"/pafka-*.whl
  mv "$wheels.partial" "$wheels"
  echo "wheels built in $(($(date +%s) - started))s: $wheels"
fi

# The Debian packages the Dockerfile's stages install, with apt's package lists, fetched by a
# container of the base (its own dpkg state, so exactly the missing dependencies) into a cache
# keyed by the Dockerfile and the base image; the build installs from them with --no-download.
base_id=$(podman --storage-driver vfs image inspect --format '{{.Id}}' "$base")
packages=$(sed -n 's/.*apt-get install -y --no-install-recommends "\$@" \([a-z0-9 .+-]*\).*/\1/p' Dockerfile | tr '\n' ' ')
apt_cache="$cache/apt-$(cat Dockerfile | sha256sum | cut -c1-12)-$(echo "$base_id" | cut -c1-12)"
if [ ! -d "$apt_cache" ]; then
  rm -rf "$apt_cache.partial"
  mkdir -p "$apt_cache.partial/lists/partial" "$apt_cache.partial/archives/partial"
  apt_options="-o Dir::State::Lists=/run/pafka-apt/lists -o Dir::Cache::Archives=/run/pafka-apt/archives"
  # runc cannot raise a limit past the host's, so the limits are given explicitly.
  podman --storage-driver vfs run --rm --runtime runc --cgroup-manager cgroupfs --network host \
    --ulimit "nofile=$(ulimit -Hn):$(ulimit -Hn)" --ulimit nproc=4096:4096 --volume "$apt_cache.partial:/run/pafka-apt" "$base" sh -c \
    "apt-get -qq $apt_options update && apt-get -qq $apt_options install --download-only -y --no-install-recommends $packages"
  rm -f "$apt_cache.partial/lists/lock" "$apt_cache.partial/archives/lock"
  mv "$apt_cache.partial" "$apt_cache"
  echo "debian packages ($packages) fetched in $(($(date +%s) - started))s: $apt_cache"
fi

# No network in the build (chroot isolation shares the caller's network namespace, so the
# build runs in a new, empty one): everything it installs is mounted, never part of a layer.
unshare --net buildah bud --isolation chroot --storage-driver vfs --layers \
  --volume "$wheels:/run/pafka-wheels:ro" --volume "$apt_cache:/run/pafka-apt" \
  --build-arg "PYTHON_IMAGE=$base" --target "$target" -t "$tag" -f Dockerfile .
echo "built $tag with buildah on $base in $(($(date +%s) - started))s"
