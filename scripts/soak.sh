#!/usr/bin/env bash
# A soak run (not part of CI): handset bench holds CALLS simulated calls for DURATION and
# fails unless every call is held, no caller saw an error, and the Handset's resident memory
# and goroutines at the end of the hold are within MAX_DRIFT percent of their reading a minute
# in. The report lands in test-artifacts/soak.json. Defaults: 300 calls, 30 minutes, 5 %.
#
#   ./scripts/soak.sh                      # the issue's soak: 300 calls for 30 minutes
#   CALLS=100 DURATION=5m ./scripts/soak.sh
#
# A call's history is the one thing that grows with its turns, up to
# HANDSET_AGENT_HISTORY_LIMIT messages (200 by default; the bench's calls take a turn every
# seven seconds or so, and fill it in about twelve minutes). The Handset under load takes the
# value from your environment, like every bench run.
set -euo pipefail
cd "$(dirname "$0")/.."

. scripts/go.sh
require_go soak.sh

CALLS=${CALLS:-300}
DURATION=${DURATION:-30m}
MAX_DRIFT=${MAX_DRIFT:-5}

if [ ! -x bin/handset ] || [ -n "${REBUILD:-}" ]; then
	CGO_ENABLED=1 go build -trimpath -buildvcs=true -tags embedded -o bin/handset ./cmd/handset
fi
mkdir -p test-artifacts
echo "soak: $CALLS calls for $DURATION (resident memory and goroutines within $MAX_DRIFT % of the first minute)"
status=0
./bin/handset bench --calls "$CALLS" --duration "$DURATION" --max-drift "$MAX_DRIFT" --json \
	>test-artifacts/soak.json || status=$?
if [ "$status" -eq 0 ]; then
	echo "soak: passed; report in test-artifacts/soak.json"
else
	echo "soak: FAILED (exit $status); report in test-artifacts/soak.json"
fi
exit "$status"
