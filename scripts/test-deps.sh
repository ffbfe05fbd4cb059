#!/usr/bin/env bash
# The real peers the test suite talks to, beyond what setup.sh installs: recorded human
# speech (pocketsphinx-testdata), headless Chromium for the browser page, espeak-ng for its
# provider, systemd-analyze for the service files setup writes, axe-core (the accessibility
# checker the page tests run in Chromium), the real OpenClaw gateway, the SIP peers
# (sipp, baresip, kamailio) and the agent bridge's npm clients (openai, LiveKit Agents).
# Idempotent; test.sh runs it.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/apt.sh pocketsphinx-testdata chromium espeak-ng curl systemd
# A private PostgreSQL for the store tests (.cache/postgres/url), unless
# HANDSET_TEST_DATABASE_URL names a server to use instead.
[ -n "${HANDSET_TEST_DATABASE_URL:-}" ] || ./scripts/postgres.sh >/dev/null
./scripts/axe.sh
./scripts/openclaw.sh
./scripts/sip-peers.sh
./scripts/bridge-clients.sh
