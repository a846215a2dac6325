#!/usr/bin/env bash
# Prepares the build context of deploy/kubernetes/Containerfile in DIR: the built server and console (dist/),
# bin/, package.json and the production dependencies only (node_modules after `npm prune --omit=dev`: no
# TypeScript, vitest, Biome or vite in the image). dist/ is taken as built (`npm run build` first; built only when
# missing). Run from a clone where `npm ci` has run, on the same CPU
# architecture and a glibc no newer than the image's base (better-sqlite3's native module is copied as built):
#   deploy/kubernetes/image-context.sh /tmp/hangar-image
#   podman build -f deploy/kubernetes/Containerfile -t registry.example.com/hangar:1.0.0 /tmp/hangar-image
# HANGAR_IMAGE_DEPS_CACHE=DIR keeps the pruned node_modules per package-lock.json there (CI: outside the clone).
set -euo pipefail
out=${1:?usage: image-context.sh DIR}
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
[ -f dist/main.js ] && [ -f dist/worker/index.js ] || npm run build >/dev/null
rm -rf "$out" && mkdir -p "$out/data"
cp package.json package-lock.json "$out/"
cp -r bin "$out/bin"
# The built tree without source maps and declarations (not needed to run).
tar -C "$root" --exclude='*.map' --exclude='*.d.ts' -cf - dist | tar -C "$out" -xf -
lock=$(sha256sum package-lock.json | cut -c1-16)
cache=${HANGAR_IMAGE_DEPS_CACHE:-}
if [ -n "$cache" ] && [ -d "$cache/node_modules-$lock" ]; then
  cp -a "$cache/node_modules-$lock" "$out/node_modules"
else
  cp -a node_modules "$out/node_modules"
  (cd "$out" && npm prune --omit=dev --offline --no-audit --no-fund --loglevel=error >/dev/null)
  # prune leaves the emptied scope folders (@biomejs, @types, ...) behind.
  find "$out/node_modules" -mindepth 1 -maxdepth 1 -type d -empty -delete
  if [ -n "$cache" ]; then
    mkdir -p "$cache" && rm -rf "$cache"/node_modules-* && cp -a "$out/node_modules" "$cache/node_modules-$lock"
  fi
fi
# A dev dependency in the image would be a build mistake: say so instead of shipping it.
for dev in typescript vitest @biomejs/biome vite; do
  if [ -e "$out/node_modules/$dev" ]; then
    echo "image-context.sh: dev dependency $dev left in the image's node_modules" >&2
    exit 1
  fi
done
