#!/usr/bin/env bash
# Fetch the embedded engines' files from npm into .cache/engines (idempotent, pinned and
# integrity-checked). Nothing from these packages runs at install time: we only unpack them.
#   libonnxruntime.so   ONNX Runtime 1.28.2 (MIT), carried by sherpa-onnx-linux-x64 (Apache-2.0)
#   silero_vad_v5.onnx  Silero VAD v5 weights (MIT), carried by @ricky0123/vad-web (ISC)
#   fvad.wasm           WebRTC VAD (BSD-3) built for WebAssembly, from @echogarden/fvad-wasm
set -euo pipefail
cd "$(dirname "$0")/.."
dest=.cache/engines
mkdir -p "$dest" .cache/npm

fetch() { # name@version integrity file-in-package target
	local spec=$1 integrity=$2 inner=$3 target=$4
	[ -s "$dest/$target" ] && return 0
	command -v npm >/dev/null || { echo "engines: npm is required to fetch $spec" >&2; exit 1; }
	local tgz
	tgz=$(cd .cache/npm && npm pack --silent "$spec")
	local got
	got="sha512-$(openssl dgst -sha512 -binary ".cache/npm/$tgz" | base64 -w0)"
	if [ "$got" != "$integrity" ]; then
		echo "engines: $spec integrity mismatch: $got" >&2
		exit 1
	fi
	local tmp
	tmp=$(mktemp -d)
	tar xzf ".cache/npm/$tgz" -C "$tmp"
	cp "$tmp/package/$inner" "$dest/$target"
	rm -rf "$tmp"
	echo "engines: $target from $spec"
}

fetch sherpa-onnx-linux-x64@1.13.8 \
	sha512-6plnhjagsSeTntCgnlag86hWbs/uZE9Crms1LgOb68/1nKsIQjMd+WG519m+aPwT6TrsBOiEMzrx41t8sL5L5g== \
	libonnxruntime.so libonnxruntime.so
fetch @ricky0123/vad-web@0.0.31 \
	sha512-ePVq8TvB21sdHSxVMZOEIf9JVa7MAYpaIaNXeGgsPOiMCN8xbPCdF2LS5aYj7VRR3ZxzutedgV9ZplV65IA1Fg== \
	dist/silero_vad_v5.onnx silero_vad_v5.onnx
fetch @echogarden/fvad-wasm@0.2.0 \
	sha512-jPPzN6uV23dsOkKnGxajBDw81Xx3ICecw72sIzI+m4PzFWpSf/QOLvlgf7mySfqCngD54LRC1aDgD5haB45dbg== \
	fvad.wasm fvad.wasm
