#!/usr/bin/env bash
# The SIP software the SIP trunk tests talk to: sipp (Debian's sip-tester) for scripted
# callers and answerers, baresip as a real user agent that plays and records audio, and
# kamailio as a registrar and proxy with digest authentication. The tests run each binary
# in the foreground with a generated config on loopback ports, so no service is enabled or
# started here. Idempotent; test-deps.sh runs it.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/apt.sh sip-tester baresip kamailio
