#!/usr/bin/env bash
# Build librdkafka's load generator `rdkafka_performance` (examples/) against the
# librdkafka 2.15.1 that conformance/build_librdkafka.sh builds. bench/throughput.py
# drives produce and fetch with it, so that the client is C and not the bottleneck.
#
#   bench/build_rdkafka_performance.sh                 # -> bench/results/bin/rdkafka_performance
#   RDKAFKA_SRC=/tmp/ci/main/conformance/.build/librdkafka-2.15.1 bench/build_rdkafka_performance.sh
#
# The npm package the conformance build uses carries src/ and tests/ but not
# examples/, so the one C file comes from librdkafka's git tag v2.15.0 (the file is
# unchanged from v2.15.0 to the 2.15.x branch; it uses only the public API and the
# library's internal headers rd.h / rdtime.h), pinned by sha256. Offline, point
# RDKAFKA_PERF_C at a copy of that file. Idempotent; takes about a second.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(dirname "$HERE")"
RDKAFKA_SRC="${RDKAFKA_SRC:-$REPO/conformance/.build/librdkafka-2.15.1}"
OUT_DIR="${OUT_DIR:-$HERE/results/bin}"
URL=https://raw.githubusercontent.com/confluentinc/librdkafka/v2.15.0/examples/rdkafka_performance.c
SHA256=e150fc94f994534ba66a84dc28745799e89e3fc315fb01a6bcca684f5862a7ff

if [ ! -f "$RDKAFKA_SRC/src/librdkafka.a" ]; then
  echo "no $RDKAFKA_SRC/src/librdkafka.a: run conformance/build_librdkafka.sh first" >&2
  echo "(or set RDKAFKA_SRC to an existing librdkafka-2.15.1 build)" >&2
  exit 1
fi
mkdir -p "$OUT_DIR"
C_FILE="$OUT_DIR/rdkafka_performance.c"
if [ -n "${RDKAFKA_PERF_C:-}" ]; then
  cp "$RDKAFKA_PERF_C" "$C_FILE"
elif [ ! -f "$C_FILE" ]; then
  curl -fsSL "$URL" -o "$C_FILE"
fi
echo "$SHA256  $C_FILE" | sha256sum -c --quiet - \
  || { echo "ERROR: $C_FILE does not match the pinned sha256" >&2; rm -f "$C_FILE"; exit 1; }

BIN="$OUT_DIR/rdkafka_performance"
if [ "$BIN" -nt "$C_FILE" ] && [ "$BIN" -nt "$RDKAFKA_SRC/src/librdkafka.a" ]; then
  echo "$BIN is up to date"
  exit 0
fi
# The same libraries conformance/build_librdkafka.sh's configure links (Makefile.config).
LIBS="$(sed -n 's/^LIBS+=[[:space:]]*//p' "$RDKAFKA_SRC/Makefile.config")"
# rd.h includes ../config.h relative to src/: compile from a directory beside src/.
gcc -g -O2 -I"$RDKAFKA_SRC/src" -I"$RDKAFKA_SRC" "$C_FILE" -o "$BIN" \
  "$RDKAFKA_SRC/src/librdkafka.a" $LIBS
usage="$("$BIN" -h 2>&1 || true)"
grep -q "librdkafka version 2.15.1" <<<"$usage" \
  || { echo "ERROR: $BIN is not linked with librdkafka 2.15.1" >&2; exit 1; }
echo "built $BIN"
