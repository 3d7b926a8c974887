#!/usr/bin/env bash
# The stand-in for the Dockerfile's base image where no registry is reachable: Debian bookworm
# made by debootstrap from Debian packages, whose python3 is 3.11, the minor version of the
# official base (python:3.11.*-slim-bookworm). Built once into a tarball in the build folder
# (reused while it exists), then imported into the container storage under the given name.
#   images/base.sh BUILD_DIR IMAGE_NAME
set -euo pipefail
build_dir=$1
image=$2
tarball="$build_dir/base-bookworm-py3.11.tar"
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}

if [ ! -f "$tarball" ]; then
  mkdir -p "$build_dir"
  rootfs="$build_dir/base-rootfs"
  rm -rf "$rootfs"
  started=$(date +%s)
  # python-is-python3: the official image's `python`, which the Dockerfile calls;
  # python3-venv: its venv module with ensurepip.
  debootstrap --variant=minbase --include=python3,python3-venv,python-is-python3 \
    bookworm "$rootfs" "$mirror" >"$build_dir/debootstrap.log"
  # What the slim image leaves out too: package caches and lists, docs, man pages, locales.
  rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/* \
    "$rootfs"/usr/share/doc/* "$rootfs"/usr/share/man/* "$rootfs"/usr/share/locale/*
  # /proc and /sys are the runtime's to mount; /dev too (debootstrap may leave nodes there).
  tar --numeric-owner -C "$rootfs" -cf "$tarball.partial" \
    --exclude=./proc/* --exclude=./sys/* --exclude=./dev/* .
  mv "$tarball.partial" "$tarball"
  rm -rf "$rootfs"
  echo "base: debootstrap and tarball in $(($(date +%s) - started))s: $tarball"
fi

# The official image's environment: python on PATH, UTF-8, python3 as the default command.
podman --storage-driver vfs import \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'ENV LANG=C.UTF-8' \
  --change 'CMD ["python3"]' \
  "$tarball" "$image" >/dev/null
echo "base: imported $image"
