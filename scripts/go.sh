# Sourced by setup.sh and test.sh (bash), not run. `require_go NAME` checks the go on PATH
# and makes every later `go` command in the script use the Go release go.mod pins; scripts
# call it first, so that a missing or old Go stops them at once instead of after the apt and
# npm steps. `fetch_go NAME` then gets that release (network: after apt has installed
# ca-certificates) and stops with the fix when it cannot.
#
# Any Go from 1.21 on is enough to start with: it fetches the pinned release itself from
# the Go module proxy (Go's toolchain switching: GOTOOLCHAIN=go1.N.M, exported here; once
# fetched it stays in the module cache). This also overrides a GOTOOLCHAIN=local set in
# the Go installation's go.env, as distribution packages do. An older Go, or none, stops
# with the two commands that install the pinned release from go.dev.
#
#   HANDSET_GOTOOLCHAIN   a GOTOOLCHAIN value to use instead of go.mod's release, unchecked
#                         (local: the go on PATH as it is; go1.27.0: that release)

# go_pinned prints the release go.mod pins: its toolchain line, else its go line.
go_pinned() {
	local v
	v=$(sed -n 's/^toolchain[[:space:]]*go\([0-9][0-9a-z.]*\).*/\1/p' go.mod | head -1)
	[ -n "$v" ] || v=$(sed -n 's/^go[[:space:]][[:space:]]*\([0-9][0-9a-z.]*\).*/\1/p' go.mod | head -1)
	[ -n "$v" ] || return 1
	# `go 1.26` names the language; its first release is 1.26.0.
	case "$v" in 1.[0-9]|1.[0-9][0-9]) v=$v.0 ;; esac
	echo "$v"
}

# go_install_hint VERSION: the commands that install that release from go.dev.
go_install_hint() {
	local v=$1 os arch sudo=""
	os=$(uname -s | tr '[:upper:]' '[:lower:]')
	case "$(uname -m)" in
	x86_64 | amd64) arch=amd64 ;;
	aarch64 | arm64) arch=arm64 ;;
	armv6l | armv7l) arch=armv6l ;;
	i?86) arch=386 ;;
	*) arch=$(uname -m) ;;
	esac
	[ "$(id -u)" -eq 0 ] || sudo="sudo "
	cat <<EOF
Install Go $v from https://go.dev/dl/ into /usr/local/go (this replaces a Go already there):
    ${sudo}rm -rf /usr/local/go && curl -fsSL https://go.dev/dl/go$v.$os-$arch.tar.gz | ${sudo}tar -C /usr/local -xz
    export PATH=/usr/local/go/bin:\$PATH    # put this line in ~/.profile too
then run $0 again.
EOF
}

# require_go NAME: see the top of the file. NAME prefixes the messages.
require_go() {
	local who=$1 want have minor
	want=$(go_pinned) || { echo "$who: go.mod has no go line" >&2; exit 1; }
	if ! command -v go >/dev/null; then
		echo "$who: Go is not installed (no go on PATH). Handset builds with Go $want (go.mod)." >&2
		go_install_hint "$want" >&2
		exit 1
	fi
	if [ -n "${HANDSET_GOTOOLCHAIN:-}" ]; then
		export GOTOOLCHAIN=$HANDSET_GOTOOLCHAIN
		echo "$who: GOTOOLCHAIN=$GOTOOLCHAIN (HANDSET_GOTOOLCHAIN)"
		return 0
	fi
	# The go on PATH itself: GOTOOLCHAIN=local keeps a Go from 1.21 on from switching.
	have=$(GOTOOLCHAIN=local go version 2>/dev/null | grep -o 'go[0-9][0-9]*\.[0-9][0-9a-z.]*' | head -1) || true
	have=${have#go}
	minor=$(echo "$have" | sed -n 's/^1\.\([0-9][0-9]*\).*/\1/p')
	if [ -n "$minor" ] && [ "$minor" -lt 21 ]; then
		echo "$who: the go on PATH ($(command -v go)) is Go $have: too old. Handset builds with Go $want (go.mod);" >&2
		echo "a Go of 1.21 or later fetches that release by itself, an older one cannot (Debian 12's own golang is 1.19)." >&2
		go_install_hint "$want" >&2
		exit 1
	fi
	export GOTOOLCHAIN=go$want
	if [ "$have" != "$want" ]; then
		echo "$who: the go on PATH is Go ${have:-of unknown version}; using Go $want (go.mod) through GOTOOLCHAIN=$GOTOOLCHAIN"
	fi
}

# fetch_go NAME: after require_go, get the pinned release (a few seconds, the first time)
# so that a failure shows here, with the fix.
fetch_go() {
	local who=$1 want got
	[ -z "${HANDSET_GOTOOLCHAIN:-}" ] || return 0
	want=${GOTOOLCHAIN#go}
	# Go's own messages (downloading, or why it cannot) go to stderr, straight through.
	got=$(go version) || true
	case "$got" in
	"go version go$want "*) ;;
	*)
		echo "$who: GOTOOLCHAIN=$GOTOOLCHAIN did not give Go $want (Go fetches it through the module proxy, GOPROXY)${got:+; it gave: $got}" >&2
		go_install_hint "$want" >&2
		exit 1
		;;
	esac
}
