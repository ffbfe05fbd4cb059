#!/usr/bin/env bash
# Fetch axe-core, the accessibility checker the browser page tests run inside headless
# Chromium (internal/pagetest), from npm into .cache/axe (idempotent, pinned and
# integrity-checked). Nothing in the package runs here: we only unpack axe.min.js.
#   .cache/axe/axe.min.js   axe-core 4.14.1 (MPL-2.0)
#   .cache/axe/version      the package it came from; another pin fetches again
set -euo pipefail
cd "$(dirname "$0")/.."
SPEC=axe-core@4.14.1
INTEGRITY=sha512-FHfa+lmNjQZfJz1q8wKqIDwC6DExcHt/pkjNQb09a3NPjCKg2rhu5qb2S4r76ASyFNNtuFooJpZe37OgudVGtQ==
dest=.cache/axe
[ -s "$dest/axe.min.js" ] && [ "$(cat "$dest/version" 2>/dev/null)" = "$SPEC" ] && exit 0
mkdir -p "$dest" .cache/npm
command -v npm >/dev/null || { echo "axe: npm is required to fetch $SPEC (apt-get install npm)" >&2; exit 1; }
tgz=$(cd .cache/npm && npm pack --silent "$SPEC" | tail -n1)
[ -n "$tgz" ] && [ -s ".cache/npm/$tgz" ] || { echo "axe: npm pack $SPEC produced no tarball" >&2; exit 1; }
got="sha512-$(openssl dgst -sha512 -binary ".cache/npm/$tgz" | base64 -w0)"
if [ "$got" != "$INTEGRITY" ]; then
	echo "axe: $SPEC integrity mismatch: $got" >&2
	exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tar xzf ".cache/npm/$tgz" -C "$tmp" package/axe.min.js
cp "$tmp/package/axe.min.js" "$dest/axe.min.js"
echo "$SPEC" >"$dest/version"
echo "axe: $dest/axe.min.js from $SPEC"
