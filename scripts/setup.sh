#!/usr/bin/env bash
# Install everything Handset needs on a fresh Debian 12 machine and build the binary.
# Idempotent: run it again after pulling. Needs root (or sudo) only for apt.
set -euo pipefail
cd "$(dirname "$0")/.."

# System packages: flite speaks test callers' lines; pocketsphinx-testdata is real recorded
# speech for VAD accuracy tests; npm fetches the embedded engines' files.
APT_PACKAGES=(ca-certificates openssl flite pocketsphinx-testdata)
command -v npm >/dev/null || APT_PACKAGES+=(npm) # machines with Node.js from elsewhere already have it
missing=()
for p in "${APT_PACKAGES[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
	SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
	$SUDO apt-get update -qq
	$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

./scripts/engines.sh
./scripts/openclaw.sh # the real OpenClaw gateway the runtime tests call through (pinned, from npm)

command -v go >/dev/null || { echo "setup: Go 1.26 is required (https://go.dev/dl/)" >&2; exit 1; }
go mod download
mkdir -p bin
# The embedded engines (Silero VAD through ONNX Runtime) need cgo; the core builds without.
CGO_ENABLED=1 go build -trimpath -tags embedded -o bin/handset ./cmd/handset
echo "setup: built bin/handset ($(./bin/handset version | head -1))"
