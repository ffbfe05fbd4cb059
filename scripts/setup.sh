#!/usr/bin/env bash
# Install what Handset needs on a fresh Debian 12 machine and build the binary with the
# offline engines, so `./bin/handset demo` works with no keys. Idempotent: run it again
# after pulling. Needs root (or sudo) only for apt, and a Go of 1.21 or later on PATH: it
# fetches the release go.mod pins by itself (scripts/go.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

# First, so that a missing or old Go stops here, not after the slow steps.
. scripts/go.sh
require_go setup

# System packages: the C toolchain for cgo; PocketSphinx and its US English model (offline
# speech recognition); flite (offline speech synthesis, and the test callers' voice); npm
# fetches the other engines' files (ONNX Runtime, Silero and WebRTC VAD).
APT_PACKAGES=(ca-certificates openssl gcc libc6-dev pkg-config
	libpocketsphinx-dev libsphinxbase-dev pocketsphinx-en-us flite flite1-dev)
command -v npm >/dev/null || APT_PACKAGES+=(npm) # machines with Node.js from elsewhere already have it
./scripts/apt.sh "${APT_PACKAGES[@]}"
fetch_go setup # needs ca-certificates

./scripts/engines.sh

go mod download
mkdir -p bin
# The embedded engines need cgo; the core builds without (CGO_ENABLED=0 go build ./cmd/handset).
# -buildvcs=true: handset version names the commit even where GOFLAGS turns VCS stamping off.
CGO_ENABLED=1 go build -trimpath -buildvcs=true -tags embedded -o bin/handset ./cmd/handset
echo "setup: built bin/handset ($(./bin/handset version | head -1)); try it: ./bin/handset demo"
