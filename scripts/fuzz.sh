#!/usr/bin/env bash
# Runs each fuzz target (pkg:FuzzName arguments) for FUZZTIME (executions,
# "2000x", or a duration): one instrumented test binary is built per
# package (go test -c -fuzz), then each of its targets runs from it, so a
# package with several targets is compiled for fuzzing once. A failing
# target prints its output and the failing input's path, and stops the run.
set -euo pipefail
fuzztime=${FUZZTIME:-1000x}
go=${GO:-go}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cache=$($go env GOCACHE)/fuzz
declare -A built
start=$SECONDS
for t in "$@"; do
  pkg=${t%%:*} fn=${t##*:}
  bin=$work/$(echo "$pkg" | tr '/.' '__').test
  if [[ -z ${built[$pkg]:-} ]]; then
    $go test -c -fuzz=. -o "$bin" "$pkg"
    built[$pkg]=1
  fi
  importpath=$($go list "$pkg")
  t0=$SECONDS
  if ! (cd "$pkg" && "$bin" -test.run='^$' -test.fuzz="^$fn\$" -test.fuzztime="$fuzztime" \
      -test.fuzzcachedir="$cache/$importpath" >"$work/log" 2>&1); then
    cat "$work/log"
    echo "fuzz $pkg $fn: FAILED (the failing input is under $pkg/testdata/fuzz/$fn)" >&2
    exit 1
  fi
  echo "fuzz $pkg $fn ($fuzztime): ok, $((SECONDS - t0))s"
done
echo "fuzz: $# targets in $((SECONDS - start))s"
