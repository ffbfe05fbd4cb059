#!/usr/bin/env bash
# Install what Handset needs on a fresh Debian 12 machine and build the binary with the
# offline engines, so `./bin/handset demo` works with no keys. Idempotent: run it again
# after pulling. Needs root (or sudo) only for apt.
set -euo pipefail
cd "$(dirname "$0")/.."

# System packages: the C toolchain for cgo; PocketSphinx and its US English model (offline
# speech recognition); flite (offline speech synthesis, and the test callers' voice); npm
# fetches the other engines' files (ONNX Runtime, Silero and WebRTC VAD).
APT_PACKAGES=(ca-certificates openssl gcc libc6-dev pkg-config
	libpocketsphinx-dev libsphinxbase-dev pocketsphinx-en-us flite flite1-dev)
command -v npm >/dev/null || APT_PACKAGES+=(npm) # machines with Node.js from elsewhere already have it
./scripts/apt.sh "${APT_PACKAGES[@]}"

./scripts/engines.sh

command -v go >/dev/null || { echo "setup: Go 1.26 is required (https://go.dev/dl/)" >&2; exit 1; }
go mod download
mkdir -p bin
# The embedded engines need cgo; the core builds without (CGO_ENABLED=0 go build ./cmd/handset).
CGO_ENABLED=1 go build -trimpath -tags embedded -o bin/handset ./cmd/handset
echo "setup: built bin/handset ($(./bin/handset version | head -1)); try it: ./bin/handset demo"
