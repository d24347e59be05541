#!/usr/bin/env bash
# `make soak`: toolhub held at 70% of its saturation for 4 minutes (SOAK_DURATION),
# sampling the hub's RSS, goroutines and p99 every 10 s. Prints the section and,
# unless --print, puts it into docs/benchmarks.md in place of the last one.
set -euo pipefail
cd "$(dirname "$0")/.."
vendor_bin=()
if go build -o bin/conformance-server github.com/mark3labs/mcp-go/examples/conformance >/dev/null 2>&1; then
  vendor_bin=(--vendor-bin bin/conformance-server)
fi
section=$(mktemp)
trap 'rm -f "$section" "$section.md"' EXIT
{
  echo "## Soak: 70% of saturation for ${SOAK_DURATION:-4m} (\`toolhub bench --soak\`, \`make soak\`)"
  echo
  echo "The hop bench's vendor and hub, each in its own process: first as many calls as 16 clients make (the"
  echo "saturation), then the same clients paced to 70% of it. Every 10 s: that window's calls/s and percentiles,"
  echo "the hub's RSS (VmRSS) and goroutines (go_goroutines on its /metrics). Flat columns mean no leak."
  echo
  ./bin/toolhub bench --soak ${vendor_bin[@]+"${vendor_bin[@]}"} --soak-duration "${SOAK_DURATION:-4m}" 2>/dev/null
  echo
} >"$section"
cat "$section"
if [ "${1:-}" = --print ]; then exit 0; fi
doc=docs/benchmarks.md
if [ -f "$doc" ] && grep -q '^## Soak' "$doc"; then
  # Replace the old section: from its heading to the next one (or the end).
  awk -v f="$section" '
    /^## Soak/ { while ((getline l < f) > 0) print l; skip = 1; next }
    skip && /^## / { skip = 0 }
    !skip { print }' "$doc" >"$section.md"
  cp "$section.md" "$doc"
else
  mkdir -p docs
  { [ -f "$doc" ] && cat "$doc" && echo; cat "$section"; } >"$section.md"
  cp "$section.md" "$doc"
fi
echo "wrote the soak into $doc" >&2
