#!/usr/bin/env bash
# Runs each fuzz target (pkg:FuzzName arguments) for FUZZTIME (executions,
# "2000x", or a duration): one instrumented test binary is built per
# package (go test -c -fuzz), then each of its targets runs from it, so a
# package with several targets is compiled for fuzzing once. The next
# package's binary is built while the targets of the one before run. A
# failing target prints its output and the failing input's path, and stops
# the run.
#
# With FUZZ_BINDIR set the binaries live there and are kept: `fuzz.sh
# --build-only …` builds them (make test does so at idle priority while
# the race tests run) and a later `fuzz.sh …` with the same FUZZ_BINDIR
# runs the targets from them without building again.
set -euo pipefail
fuzztime=${FUZZTIME:-1000x}
go=${GO:-go}
build_only=
if [[ ${1:-} == --build-only ]]; then
  build_only=1
  shift
fi
builder=
if [[ -n ${FUZZ_BINDIR:-} ]]; then
  mkdir -p "$FUZZ_BINDIR"
  work=$FUZZ_BINDIR
  trap '[ -n "$builder" ] && kill "$builder" 2>/dev/null' EXIT
else
  work=$(mktemp -d)
  trap '[ -n "$builder" ] && kill "$builder" 2>/dev/null; rm -rf "$work"' EXIT
fi
cache=$($go env GOCACHE)/fuzz
start=$SECONDS

# The packages in order of first appearance, and their import paths (one
# go list for all of them).
pkgs=()
declare -A seen importpath
for t in "$@"; do
  pkg=${t%%:*}
  [[ -n ${seen[$pkg]:-} ]] && continue
  seen[$pkg]=1
  pkgs+=("$pkg")
done
mapfile -t paths < <($go list "${pkgs[@]}")
for i in "${!pkgs[@]}"; do importpath[${pkgs[$i]}]=${paths[$i]}; done
bin_of() { echo "$work/$(echo "$1" | tr '/.' '__').test"; }

# Build every package's binary in the background, in order; each is
# marked done (or failed) for the runner below.
(
  for pkg in "${pkgs[@]}"; do
    bin=$(bin_of "$pkg")
    [[ -e $bin.ok ]] && continue # built before (--build-only)
    rm -f "$bin.failed"
    if $go test -c -fuzz=. -o "$bin" "$pkg" >"$bin.buildlog" 2>&1; then
      touch "$bin.ok"
    else
      touch "$bin.failed"
    fi
  done
) &
builder=$!
if [[ -n $build_only ]]; then
  wait "$builder"
  builder=
  failed=0
  for pkg in "${pkgs[@]}"; do
    if [[ -e $(bin_of "$pkg").failed ]]; then
      cat "$(bin_of "$pkg").buildlog" >&2
      echo "fuzz $pkg: build FAILED" >&2
      failed=1
    fi
  done
  [[ $failed == 0 ]] && echo "fuzz: ${#pkgs[@]} binaries built in $((SECONDS - start))s"
  exit $failed
fi

for t in "$@"; do
  pkg=${t%%:*} fn=${t##*:}
  bin=$(bin_of "$pkg")
  while [[ ! -e $bin.ok && ! -e $bin.failed ]]; do sleep 0.1; done
  if [[ -e $bin.failed ]]; then
    cat "$bin.buildlog" >&2
    echo "fuzz $pkg: build FAILED" >&2
    exit 1
  fi
  t0=$SECONDS
  if ! (cd "$pkg" && "$bin" -test.run='^$' -test.fuzz="^$fn\$" -test.fuzztime="$fuzztime" \
      -test.fuzzcachedir="$cache/${importpath[$pkg]}" >"$work/log" 2>&1); then
    cat "$work/log"
    echo "fuzz $pkg $fn: FAILED (the failing input is under $pkg/testdata/fuzz/$fn)" >&2
    exit 1
  fi
  echo "fuzz $pkg $fn ($fuzztime): ok, $((SECONDS - t0))s"
done
wait "$builder"
builder=
echo "fuzz: $# targets in $((SECONDS - start))s"
