#!/usr/bin/env bash
# Install the third-party npm clients the agent bridge's tests drive (internal/sim/bridgeclients)
# into .cache/bridge-clients (idempotent, pinned, integrity-checked):
#
#   .cache/bridge-clients/app        npm project with openai, @livekit/agents and
#                                    @livekit/agents-plugin-openai in node_modules, installed
#                                    with `npm ci` from the committed lockfile
#                                    internal/sim/bridgeclients/testdata/npm/package-lock.json,
#                                    so every transitive package is pinned and its sha512
#                                    checked by npm
#   .cache/bridge-clients/npm-cache  npm's cache (keep it between CI runs to skip downloads)
#
# Node and npm are the pinned ones scripts/openclaw.sh unpacks into .cache/openclaw; that
# script runs first when they are missing. Install scripts are not run (--ignore-scripts):
# the tests only use the clients' JavaScript, and the native parts LiveKit carries
# (rtc-node, sharp, local inference) come prebuilt in their packages or are not loaded.
#
#   BRIDGE_CLIENTS_LOCK_UPDATE=1 ./scripts/bridge-clients.sh   re-resolve with `npm install`
#                                                               and rewrite the committed
#                                                               lockfile (maintainers only)
set -euo pipefail
cd "$(dirname "$0")/.."

# The versions package.json pins; LOCK_UPDATE writes them, the check below reads them back.
# openai is the newest 6.x, not the newest release (7.x): @livekit/agents 1.9.0 and its
# plugin want openai ^6.8.1, and with 7.x at the top each would get a nested copy of 6.x.
# The plugin would then build its client from one copy while the framework tests errors
# with instanceof against the other, turning every HTTP error into a status-less
# APIConnectionError. One shared copy is what a LiveKit agent's own install has.
OPENAI_VERSION=6.49.0
LIVEKIT_AGENTS_VERSION=1.9.0
LIVEKIT_PLUGIN_VERSION=1.9.0
LOCKDIR=internal/sim/bridgeclients/testdata/npm

root=.cache/bridge-clients
app=$root/app
cache=$PWD/$root/npm-cache
start=$(date +%s)

say() { echo "bridge-clients.sh: $*"; }
die() { echo "bridge-clients.sh: $*" >&2; exit 1; }

nodebin=$PWD/.cache/openclaw/node/bin
npmcli=$PWD/.cache/openclaw/npm/bin/npm-cli.js
if ! [ -x "$nodebin/node" ] || ! [ -f "$npmcli" ]; then
	say "pinned node/npm missing; running scripts/openclaw.sh"
	./scripts/openclaw.sh >/dev/null
fi
[ -x "$nodebin/node" ] && [ -f "$npmcli" ] || die "no pinned node/npm under .cache/openclaw"

mkdir -p "$root/tmp" "$cache"
# Node 24's npm turns on the module compile cache under the temp dir: keep it in .cache.
export TMPDIR=$PWD/$root/tmp NODE_COMPILE_CACHE=$PWD/$root/tmp/node-compile-cache
: >"$root/npmrc.user"
: >"$root/npmrc.global"
pnpm() { # the pinned npm on the pinned node, with our cache and no user/global config
	PATH="$nodebin:$PATH" "$nodebin/node" "$npmcli" \
		--cache "$cache" --userconfig "$PWD/$root/npmrc.user" --globalconfig "$PWD/$root/npmrc.global" \
		--no-audit --no-fund --no-update-notifier --ignore-scripts "$@"
}
version() { "$nodebin/node" -p 'require(process.argv[1]).version' "$PWD/$app/node_modules/$1/package.json" 2>/dev/null; }

# The marker .installed is a copy of the lockfile the tree was installed from: the same
# lockfile again means nothing to do.
installed() {
	[ -f "$app/.installed" ] && cmp -s "$app/.installed" "$LOCKDIR/package-lock.json" &&
		[ "$(version openai)" = "$OPENAI_VERSION" ] &&
		[ "$(version @livekit/agents)" = "$LIVEKIT_AGENTS_VERSION" ] &&
		[ "$(version @livekit/agents-plugin-openai)" = "$LIVEKIT_PLUGIN_VERSION" ]
}

if [ "${BRIDGE_CLIENTS_LOCK_UPDATE:-}" = 1 ]; then
	rm -rf "$app"
	mkdir -p "$app" "$LOCKDIR"
	cat >"$app/package.json" <<EOF
{
  "name": "handset-bridge-clients",
  "private": true,
  "dependencies": {
    "@livekit/agents": "$LIVEKIT_AGENTS_VERSION",
    "@livekit/agents-plugin-openai": "$LIVEKIT_PLUGIN_VERSION",
    "openai": "$OPENAI_VERSION"
  }
}
EOF
	(cd "$app" && pnpm install --save-exact)
	cp "$app/package.json" "$app/package-lock.json" "$LOCKDIR/"
	cp "$LOCKDIR/package-lock.json" "$app/.installed"
	say "lockfile rewritten in $LOCKDIR"
elif ! installed; then
	[ -f "$LOCKDIR/package-lock.json" ] || die "missing $LOCKDIR/package-lock.json (run with BRIDGE_CLIENTS_LOCK_UPDATE=1 once)"
	rm -rf "$app"
	mkdir -p "$app"
	cp "$LOCKDIR/package.json" "$LOCKDIR/package-lock.json" "$app/"
	(cd "$app" && pnpm ci)
	cp "$LOCKDIR/package-lock.json" "$app/.installed"
fi
installed || die "the pinned clients are not installed in $app"

echo "node:                          $("$nodebin/node" --version) (.cache/openclaw/node/bin/node)"
echo "openai:                        $(version openai)"
echo "@livekit/agents:               $(version @livekit/agents)"
echo "@livekit/agents-plugin-openai: $(version @livekit/agents-plugin-openai)"
echo "size:                          $(du -sh "$root" | cut -f1) in $root"
echo "time:                          $(($(date +%s) - start)) s"
