#!/usr/bin/env bash
# Every fuzz target for FUZZTIME each (default 10m; not part of CI, which runs each briefly).
# A finding is written by Go under the package's testdata/fuzz/<target>/ and joins the seed
# corpus once committed; the run goes on through the other targets and fails at the end,
# listing what was found.
#
#   ./scripts/fuzz.sh                     # 10 minutes a target
#   FUZZTIME=1m ./scripts/fuzz.sh ./internal/carrier/...
#   FUZZ_PARALLEL=1 ./scripts/fuzz.sh     # one worker, leaving the other cores free
set -euo pipefail
cd "$(dirname "$0")/.."

. scripts/go.sh
require_go fuzz.sh

FUZZTIME=${FUZZTIME:-10m}
parallel=()
[ -z "${FUZZ_PARALLEL:-}" ] || parallel=(-parallel "$FUZZ_PARALLEL")
pkgs=("$@")
[ ${#pkgs[@]} -gt 0 ] || pkgs=(./...)

failed=()
total=0
for pkg in $(go list "${pkgs[@]}"); do
	dir=$(go list -f '{{.Dir}}' "$pkg")
	for target in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | sed 's/^func //'); do
		total=$((total + 1))
		echo "== $pkg $target ($FUZZTIME)"
		if ! go test -run '^$' -fuzz "^${target}\$" -fuzztime "$FUZZTIME" "${parallel[@]}" "$pkg" 2>&1 | tail -20; then
			failed+=("$pkg $target")
		fi
	done
done
if [ ${#failed[@]} -gt 0 ]; then
	echo "== ${#failed[@]} of $total fuzz targets failed (findings under each package's testdata/fuzz):"
	printf '   %s\n' "${failed[@]}"
	exit 1
fi
echo "== all $total fuzz targets ran $FUZZTIME with no failure"
