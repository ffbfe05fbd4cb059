#!/usr/bin/env bash
# A private, throwaway PostgreSQL cluster for the tests (store/postgres, multi-node jobs).
# Idempotent: installs Debian's postgresql if missing, creates the cluster once, starts it
# if it is not running, and prints the URL to use (also written to .cache/postgres/url).
# The system cluster (if any) is never touched.
#
#   .cache/postgres/data     the cluster (initdb; owned by the `postgres` OS user when root
#                            runs this, by the current user otherwise)
#   .cache/postgres/log      the server log
#   .cache/postgres/url      postgres://postgres@127.0.0.1:$PORT/postgres?sslmode=disable
#   .cache/postgres/.s.PGSQL.$PORT   its unix socket
#
# It listens on 127.0.0.1 only (port HANDSET_PG_PORT, default 55432), trusts local
# connections, and runs with fsync off: it is for tests, never for data you keep.
#
#   ./scripts/postgres.sh          start (or just print the URL when it already runs)
#   ./scripts/postgres.sh stop     stop it (the data stays; rm -rf .cache/postgres to reset)
#   ./scripts/postgres.sh status   exit 0 when it runs (test.sh: to stop only what it started)
set -euo pipefail
cd "$(dirname "$0")/.."

PORT=${HANDSET_PG_PORT:-55432}
DIR=$PWD/.cache/postgres
DATA=$DIR/data
URL="postgres://postgres@127.0.0.1:$PORT/postgres?sslmode=disable"
CMD=${1:-start}
case "$CMD" in start | stop | status) ;; *) echo "usage: $0 [start|stop|status]" >&2; exit 2 ;; esac

# Without the server binaries no cluster can run: stop and status need not install them.
BIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
if [ ! -x "$BIN/pg_ctl" ]; then
	case "$CMD" in stop) exit 0 ;; status) exit 1 ;; esac
	./scripts/apt.sh postgresql
	BIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
fi
[ -x "$BIN/pg_ctl" ] || { echo "postgres.sh: no PostgreSQL server binaries under /usr/lib/postgresql" >&2; exit 1; }

# as_owner runs a command as the cluster's owner: `postgres` when we are root (the server
# refuses to run as root), ourselves otherwise.
if [ "$(id -u)" -eq 0 ]; then
	OWNER=postgres
	as_owner() { (cd / && runuser -u postgres -- "$@"); }
else
	OWNER=$(id -un)
	as_owner() { "$@"; }
fi

mkdir -p "$DIR"
URLFILE=$DIR/url
if [ "$(id -u)" -eq 0 ]; then
	chown "$OWNER": "$DIR"
	if ! as_owner test -w "$DIR"; then
		# The checkout sits under a folder the postgres user cannot enter (root's home):
		# keep the cluster in a folder of its own, one per checkout.
		DIR=/var/tmp/handset-postgres-$(printf %s "$PWD" | sha256sum | cut -c1-12)
		DATA=$DIR/data
		mkdir -p "$DIR"
		chown "$OWNER": "$DIR"
	fi
	[ -d "$DATA" ] && chown -R "$OWNER": "$DATA"
	[ -e "$DIR/log" ] && chown "$OWNER": "$DIR/log"
fi

# in_use: something already listens on 127.0.0.1:$1 (another checkout's cluster, say).
in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
free_port() {
	local p=$1
	while in_use "$p"; do p=$((p + 1)); done
	echo "$p"
}

running() { [ -f "$DATA/PG_VERSION" ] && as_owner "$BIN/pg_ctl" status -D "$DATA" >/dev/null 2>&1; }
case "$CMD" in
stop)
	if running; then
		as_owner "$BIN/pg_ctl" stop -D "$DATA" -m fast -w >/dev/null
		echo "postgres.sh: stopped"
	fi
	exit 0
	;;
status)
	if running; then
		echo "postgres.sh: running in $DATA (stop it: ./scripts/postgres.sh stop)"
		exit 0
	fi
	echo "postgres.sh: not running"
	exit 1
	;;
esac

if [ ! -f "$DATA/PG_VERSION" ]; then
	[ -n "${HANDSET_PG_PORT:-}" ] || PORT=$(free_port "$PORT")
	rm -rf "$DATA"
	echo "postgres.sh: creating a test cluster in $DATA"
	as_owner "$BIN/initdb" -D "$DATA" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 --no-sync >/dev/null
	cat >>"$DATA/postgresql.conf" <<EOF

# handset test cluster (scripts/postgres.sh)
listen_addresses = '127.0.0.1'
port = $PORT
unix_socket_directories = '$DIR'
max_connections = 200
fsync = off
synchronous_commit = off
full_page_writes = off
timezone = 'UTC'
EOF
fi

if ! as_owner "$BIN/pg_ctl" status -D "$DATA" >/dev/null 2>&1; then
	# A port set by an earlier run with another HANDSET_PG_PORT wins over this one's: keep
	# postgresql.conf the source of truth.
	PORT=$(sed -n 's/^port = \([0-9]*\).*/\1/p' "$DATA/postgresql.conf" | tail -1)
	if in_use "$PORT"; then # taken since the cluster was made: move to a free port
		PORT=$(free_port "$PORT")
		echo "port = $PORT" >>"$DATA/postgresql.conf"
	fi
	start() { as_owner "$BIN/pg_ctl" start -D "$DATA" -l "$DIR/log" -w -t 60 >/dev/null 2>&1; }
	if ! start && tail -5 "$DIR/log" | grep -q 'Address already in use'; then
		# Another program took the port between the check and the start (the port is in
		# the ephemeral range): once more on the next free one.
		PORT=$(free_port $((PORT + 1)))
		echo "port = $PORT" >>"$DATA/postgresql.conf"
		start || true
	fi
	URL="postgres://postgres@127.0.0.1:$PORT/postgres?sslmode=disable"
	if ! as_owner "$BIN/pg_ctl" status -D "$DATA" >/dev/null 2>&1; then
		echo "postgres.sh: the server did not start; its log:" >&2
		tail -20 "$DIR/log" >&2
		exit 1
	fi
	# On stderr: stdout is the URL alone.
	echo "postgres.sh: started the test cluster on port $PORT (./scripts/postgres.sh stop stops it)" >&2
else
	PORT=$(sed -n 's/^port = \([0-9]*\).*/\1/p' "$DATA/postgresql.conf" | tail -1)
	URL="postgres://postgres@127.0.0.1:$PORT/postgres?sslmode=disable"
fi

echo "$URL" >"$URLFILE"
echo "$URL"
