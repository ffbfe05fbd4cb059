#!/usr/bin/env bash
# The README's promise, on the built binary: `./bin/handset demo` starts with nothing but
# what setup.sh installed, says what it chose, serves the call page, and stops cleanly.
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'kill "$pid" 2>/dev/null || true; rm -rf "$tmp"' EXIT
(cd "$tmp" && exec "$OLDPWD/bin/handset" demo --listen 127.0.0.1:0 >out.txt 2>err.txt) &
pid=$!
for _ in $(seq 100); do grep -q '^Open http' "$tmp/out.txt" 2>/dev/null && break; sleep 0.1; done
url=$(sed -n 's/^Open \(http[^ ]*\) .*/\1/p' "$tmp/out.txt")
if [ -z "$url" ]; then
	echo "smoke: demo did not print its URL"; cat "$tmp/out.txt" "$tmp/err.txt"; exit 1
fi
curl -fsS "$url" | grep -q 'id="call"' || { echo "smoke: no call page at $url"; exit 1; }
curl -fsS "${url}browser/app.js" >/dev/null || { echo "smoke: no page script"; exit 1; }
grep -q 'sphinx=ready flite=ready' "$tmp/err.txt" || { echo "smoke: engines not ready:"; cat "$tmp/err.txt"; exit 1; }
kill -TERM "$pid"
wait "$pid" || { echo "smoke: demo did not stop cleanly"; cat "$tmp/err.txt"; exit 1; }
sed 's/^/  /' "$tmp/out.txt"
echo "smoke: bin/handset demo served $url and stopped cleanly"
