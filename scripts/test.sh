#!/usr/bin/env bash
# Handset's whole test suite, the full tier: formatting, vet, staticcheck, unit and
# whole-call tests with the race detector, and a short run of every fuzz target on top of
# its committed seed corpus. (The fast tier, `go test -short ./...`, needs only Go.)
# The first failing stage stops the run; the end of the output names it and lists the
# stages that did not run. The private PostgreSQL cluster the run starts is stopped at the
# end; one that already ran is left running (./scripts/postgres.sh stop).
set -euo pipefail
cd "$(dirname "$0")/.."

. scripts/go.sh
require_go test.sh
fetch_go test.sh

# The full tier: a test whose peer (PostgreSQL, an engine, Chromium, ...) is missing fails
# instead of skipping (internal/testpeer).
export HANDSET_TEST_FULL=1

# stage NAME COMMAND [ARG...] adds a stage. Stages run in the order added, in this shell
# (a function can export for the later ones), under set -e: a failing command fails its
# stage and ends the run.
STAGE_NAMES=()
STAGE_COMMANDS=()
stage() {
	STAGE_NAMES+=("$1")
	shift
	STAGE_COMMANDS+=("$(printf '%q ' "$@")")
}

# The store/postgres tests (and multi-node job tests) use the private cluster postgres.sh
# starts, unless HANDSET_TEST_DATABASE_URL names a server.
pg_stop="" # set when this run may have started the cluster: the end stops it
pg_left="" # set when it already ran: the end says so
test_deps() {
	if [ -z "${HANDSET_TEST_DATABASE_URL:-}" ]; then
		if ./scripts/postgres.sh status >/dev/null 2>&1; then pg_left=1; else pg_stop=1; fi
	fi
	./scripts/test-deps.sh
	export HANDSET_TEST_DATABASE_URL="${HANDSET_TEST_DATABASE_URL:-$(cat .cache/postgres/url)}"
}
stage "test dependencies (scripts/test-deps.sh)" test_deps

check_gofmt() {
	# The pinned release's gofmt: one on PATH may belong to an older Go.
	local unformatted
	unformatted=$("$(go env GOROOT)/bin/gofmt" -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
	if [ -n "$unformatted" ]; then echo "gofmt would change:"; echo "$unformatted"; return 1; fi
}
stage gofmt check_gofmt

vet() {
	go vet ./...
	CGO_ENABLED=1 go vet -tags embedded ./...
}
stage "go vet" vet

# staticcheck, pinned (its settings and their reasons: staticcheck.conf); run from the
# module proxy, so it adds nothing to go.mod.
STATICCHECK=honnef.co/go/tools/cmd/staticcheck@v0.8.2
run_staticcheck() {
	go run "$STATICCHECK" ./...
	CGO_ENABLED=1 go run "$STATICCHECK" -tags embedded ./...
}
stage staticcheck run_staticcheck

# internal/cli, the longest package, took 19 minutes with -race on a loaded 2-core machine
# before its whole-call tests ran once per carrier (twilio, telnyx, plivo).
stage "go test -race" go test -race -count=1 -timeout 75m ./...

# The race detector allocates and empties sync.Pools at random, so the tests that count
# allocations (named *Allocat*) skip the counting under it; they count here.
stage "allocation counts, without the race detector" go test -count=1 -run 'Allocat' ./...

stage "go test -tags embedded (offline engines linked through cgo)" \
	env CGO_ENABLED=1 go test -race -count=1 -tags embedded ./internal/audio/vad/... ./internal/audio/echo/ ./internal/stt/sphinx/ ./internal/tts/...

# The whole-call tests that need the engines: real speech through each VAD, an offline
# phone call, a real SIP phone (baresip) calling through a real proxy (kamailio), barge-in
# at phone levels with Silero, and the demo in headless Chromium (its
# screenshots land in test-artifacts/, and axe-core checks the page for accessibility).
stage "whole calls with the engines, headless Chromium included" \
	env CGO_ENABLED=1 go test -race -count=1 -tags embedded \
	-run 'TestRealSpeechThroughEachVAD|TestVADSelection|TestOfflinePhoneCall|TestBaresipCallsHandsetThroughKamailio|TestBaresipCallsHandsetOverTLSWithSRTP|TestBaresipCallsHandsetInG722|TestDemoInChromium|TestVersionReportsEngines' ./internal/cli/ ./internal/gateway/

# Timing is what it measures: without the race detector. Every VAD through one carrier (the
# matrix compares the VADs), and every other carrier with the energy VAD (their wires).
barge_in_levels() {
	env CGO_ENABLED=1 go test -count=1 -tags embedded -run 'TestBargeInAtPhoneLevels/^twilio$' ./internal/cli/
	env CGO_ENABLED=1 go test -count=1 -tags embedded -run 'TestBargeInAtPhoneLevels/^(telnyx|plivo)$/^energy$' ./internal/cli/
}
stage "barge-in at phone levels, every VAD, every carrier" barge_in_levels

smoke_demo() {
	CGO_ENABLED=1 go build -trimpath -buildvcs=true -tags embedded -o bin/handset ./cmd/handset
	./scripts/smoke-demo.sh
}
stage "the built binary: bin/handset demo" smoke_demo

# A smoke run: the report is complete and no call failed; times are not judged. It exits
# non-zero when a call failed, a figure is missing, or fewer calls were held.
smoke_bench() {
	local c
	mkdir -p test-artifacts
	for c in twilio telnyx plivo sip; do
		./bin/handset bench --carrier "$c" --calls 50 --duration 20s --json >"test-artifacts/bench-smoke-$c.json"
		grep -q '"calls_held": 50' "test-artifacts/bench-smoke-$c.json"
	done
}
stage "the built binary: bin/handset bench, through each carrier" smoke_bench

fuzz_all() {
	local pkg dir target out
	for pkg in $(go list ./...); do
		dir=$(go list -f '{{.Dir}}' "$pkg")
		for target in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | sed 's/^func //'); do
			echo "-- $pkg $target"
			fuzz() { go test -run '^$' -fuzz "^${target}\$" -fuzztime "$FUZZTIME" "$pkg" 2>&1; }
			if ! out=$(fuzz); then
				echo "$out" | tail -25
				# A finding always writes a crasher under testdata/fuzz: that is a real failure.
				# Without one the fuzzing engine itself failed (seen once under load): retry once.
				if [ -n "$(git status --porcelain -- "$dir/testdata/fuzz" 2>/dev/null)" ] || ! out=$(fuzz); then
					echo "$out" | tail -25
					return 1
				fi
				echo "   (the fuzzing engine failed without a finding; the retry passed)"
			fi
		done
	done
}
stage "fuzz (${FUZZTIME:=5s} per target)" fuzz_all

# finish runs at every exit: it stops the PostgreSQL cluster this run started, and names
# the stage that failed and the ones that did not run.
current=-1
finish() {
	local status=$? i failed
	trap - EXIT
	set +e
	if [ -n "$pg_stop" ] && ./scripts/postgres.sh status >/dev/null 2>&1; then
		./scripts/postgres.sh stop >/dev/null && echo "== stopped the test PostgreSQL cluster this run started"
	elif [ -n "$pg_left" ]; then
		echo "== the test PostgreSQL cluster was running before this run and still runs (stop it: ./scripts/postgres.sh stop)"
	fi
	if [ "$status" -eq 0 ] && [ "$current" -eq "${#STAGE_NAMES[@]}" ]; then
		echo "== all tests passed"
		exit 0
	fi
	[ "$status" -ne 0 ] || status=1
	case "$status" in
	130 | 143) failed=INTERRUPTED ;;
	*) failed=FAILED ;;
	esac
	if [ "$current" -ge 0 ] && [ "$current" -lt "${#STAGE_NAMES[@]}" ]; then
		echo "== $failed at stage $((current + 1))/${#STAGE_NAMES[@]}: ${STAGE_NAMES[$current]} (exit status $status)"
	else
		echo "== $failed before the first stage (exit status $status)"
	fi
	if [ $((current + 1)) -lt "${#STAGE_NAMES[@]}" ]; then
		echo "== these stages did not run:"
		for ((i = current + 1; i < ${#STAGE_NAMES[@]}; i++)); do echo "   - ${STAGE_NAMES[$i]}"; done
	else
		echo "== it was the last stage: every other stage ran"
	fi
	exit "$status"
}
trap finish EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

for current in "${!STAGE_NAMES[@]}"; do
	echo "== [$((current + 1))/${#STAGE_NAMES[@]}] ${STAGE_NAMES[$current]}"
	eval "${STAGE_COMMANDS[$current]}"
done
current=${#STAGE_NAMES[@]}
