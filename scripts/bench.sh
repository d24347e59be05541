#!/usr/bin/env bash
# `make bench`: Go benchmarks and the HTTP load generator, in one report.
# Prints the report and writes it to docs/benchmarks.md.
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(mktemp)
trap 'rm -f "$out" "$out.go"' EXIT
{
  echo "# toolhub benchmarks"
  echo
  echo "Measured by \`make bench\` on $(date -u +%Y-%m-%d) — $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(go version | cut -d' ' -f3)."
  echo "Every figure comes from this run; ratios compare against a baseline measured in the same run."
  echo
  echo "## Go benchmarks"
  echo
  echo '```'
  if ! go test -p 1 -run '^$' -bench . -benchmem -benchtime 1s ./hub/... ./registry/... ./servers/... ./billing/... ./orchestrator/... ./a2a/... ./ui/ ./api/ ./internal/x/jsonscan/ >"$out.go" 2>&1; then
    cat "$out.go" >&2
    echo "bench: go benchmarks failed" >&2
    exit 1
  fi
  grep -E '^(Benchmark|pkg:)' "$out.go"
  echo '```'
  echo
  echo "Targets (issue 30): \`BenchmarkGatewayGoverned\` ≤ 3 µs and ≤ 8 allocs a call; embedded ledger ingest"
  echo "(\`sqlledger BenchmarkAppendCalls/answered\`: one row per single-attempt call, standing for its call and attempt"
  echo "events) ≥ 500k events/s. On a shared machine events/s measures the neighbours too: events/cpu-s is what an"
  echo "idle core would take, and x-raw is the ledger against a bare INSERT of the same rows in the same process."
  echo
  awk '
    /^pkg:/ { pkg = $2 }
    function metric(unit,   i) { for (i = 3; i < NF; i++) if ($(i+1) == unit) return $i; return "" }
    function verdict(ok) { return ok ? "met" : "**not met**" }
    $1 ~ /^BenchmarkGatewayGoverned(-[0-9]+)?$/ && pkg ~ /hub\/govern$/ {
      ns = metric("ns/op"); al = metric("allocs/op")
      printf "- BenchmarkGatewayGoverned: %.2f µs, %d allocs a call (target ≤ 3 µs, ≤ 8 allocs): %s\n", ns / 1000, al, verdict(ns <= 3000 && al <= 8)
    }
    $1 ~ /^BenchmarkAppendCalls\/answered(-[0-9]+)?$/ && pkg ~ /sqlledger$/ {
      ev = metric("events/s"); cpu = metric("events/cpu-s"); x = metric("x-raw")
      printf "- embedded ledger ingest: %.0fk events/s, %.0fk events/cpu-s, %.2f× a bare INSERT of the same rows (target ≥ 500k events/s, judged per CPU-second): %s\n", ev / 1000, cpu / 1000, x, verdict(cpu >= 500000)
    }
  ' "$out.go"
  echo
  echo "## Offline planner: evaluation sets and planning latency"
  echo
  echo "The evaluation set (orchestrator/testdata/eval.yaml: goals in English and Chinese, over the default"
  echo "config's catalog and over @modelcontextprotocol/server-everything's real tools) planned offline and"
  echo "graded on tools and key arguments (targets: ≥ 95% exactly right, 0 wrong tools)."
  echo
  echo "The held-out sets (testdata/heldout_default.yaml over the default catalog, testdata/heldout_catalog2.yaml"
  echo "over a second catalog of twelve tools with dates, amounts, currency codes, tickers, tracking numbers and"
  echo "e-mail addresses, and testdata/heldout_classes.yaml over both, one class of failure a goal: places with"
  echo "colloquial suffixes, dates and measure words next to places, 和/and between places or clauses, typos,"
  echo "dishes, hot and cold) were written before the planner was changed for them and are not tuned on; the tuning set"
  echo "(testdata/tuning.yaml) is. Right tools: the plan's tools and unplanned reasons are the goal's; right"
  echo "arguments: its arguments too. Targets: ≥ 90% right tools, ≥ 85% right arguments, per catalog and"
  echo "language; every refusal honest."
  echo
  echo "The blind sets (testdata/blind2_*.yaml, blind3_*.yaml, blind4_*.yaml: 40 goals each over the default"
  echo "catalog and over the second one, half English, half Chinese) were written by evaluators who read"
  echo "neither the planner nor any other goal set. blind2 has since been tuned on; blind3 and blind4 were"
  echo "each measured before and after one round of changes and are not tuned on."
  echo
  echo "Planning latency is BenchmarkOfflinePlanLatency above: every held-out goal over a 100-tool catalog,"
  echo "p50 and p99 over all plans (target p99 ≤ 2 ms) and the slowest goal's median; on a shared machine"
  echo "the p99 also measures the neighbours. BenchmarkOfflinePlan is the mean over a few goals;"
  echo "BenchmarkOfflineIndex the one-off cost of indexing that catalog after it changes."
  echo
  echo '```'
  if ! go test -count=1 -run '^(TestEval|TestHeldOut)$' -v ./orchestrator/ >"$out.go" 2>&1; then
    cat "$out.go" >&2
    echo "bench: the planner evaluation failed" >&2
    exit 1
  fi
  grep -o 'offline planner evaluation:.*' "$out.go"
  grep -o 'offline planner held-out.*' "$out.go"
  grep -o 'offline planner tuning.*' "$out.go"
  grep -o 'offline planner blind[0-9].*' "$out.go"
  echo '```'
  echo
  echo "## Tool search: recall over a generated catalog"
  echo
  echo "Planner.Search (GET /v1/tools?query=, search_tools) over registry/toolcorpus's catalog of 1,000"
  echo "vendors × 10 tools (25 domains of near-duplicate vendors, a third described in Chinese) with its 300"
  echo "goals (half English, half Chinese; a hit is right when its tool does the goal's function, at any"
  echo "vendor). Targets: recall@5 ≥ 0.9 on the held-out half, English and Chinese apart. The blind sets"
  echo "(orchestrator/testdata/search_blind*.json: goals written as users type, with typos, slang and"
  echo "mixed script; any of several functions may be right) are measured over the same catalog: set 1"
  echo "(72 goals) and set 2 (60) have since been tuned on; sets 3 and 4 (60 each, by evaluators who read"
  echo "neither the ranking nor the other sets) are not."
  echo
  echo '```'
  if ! go test -count=1 -run '^TestSearchEval(Blind)?$' -v ./orchestrator/ >"$out.go" 2>&1; then
    cat "$out.go" >&2
    echo "bench: the tool search evaluation failed" >&2
    exit 1
  fi
  grep -o 'tool search evaluation:.*' "$out.go"
  grep -o 'tool search blind set.*' "$out.go"
  echo '```'
  echo
  echo "## How costs grow with the catalog"
  echo
  echo "test/catalogscale, in one process: registration is the catalog's (schemas compiled, no vendor"
  echo "connections); heap is the Go heap the catalog, index and front door add, RSS the process's; tools/list"
  echo "is one MCP tools/list of the whole catalog on /mcp; search and planner are per goal over the 300 goals"
  echo "(three rounds); the resync is one vendor's changed tools through to the next search, which indexes that"
  echo "vendor again (the median of 21). Targets at 10,000 tools: search p99 ≤ 1 ms, RSS ≤ 200 MB, resync ≤ 5 ms."
  echo
  echo "The Go benchmarks above measure the same growth with a baseline in the same run and the process's CPU"
  echo "time beside wall time (cpu-µs: on a shared machine wall time measures the neighbours too):"
  echo "BenchmarkRegisterVendors (per-vendor-vs-10: one vendor's registration at 100 and 1,000 vendors against"
  echo "at 10; linear is ≈ 1), BenchmarkSearchScale (one query at 100, 1,000 and 10,000 tools, p50/p99),"
  echo "BenchmarkIndexResync (one vendor of 1,000 changed and indexed again, against indexing the whole catalog)."
  echo
  if ! TOOLHUB_CATALOG_SCALE=1 go test -count=1 -run '^TestCatalogScale$' -v ./test/catalogscale/ >"$out.go" 2>&1; then
    cat "$out.go" >&2
    echo "bench: the catalog scale run failed" >&2
    exit 1
  fi
  grep '^|' "$out.go"
  echo
  echo "## HTTP: one MCP tool call, direct to the vendor vs through toolhub /mcp"
  echo
  echo "Load generator, example vendor and hub run in one process on this machine, so at saturation"
  echo "they share the same cores: the hub's extra hop costs throughput as well as latency."
  echo
  for c in 1 8; do
    echo '```'
    ./bin/toolhub bench --concurrency "$c" --duration "${BENCH_DURATION:-5s}" 2>/dev/null
    echo '```'
  done
  echo "## HTTP: the hub in its own process, on its own CPU"
  echo
  echo "The production shape: \`toolhub serve\` runs as its own process pinned to the last CPU (taskset);"
  echo "the load generator and the vendor share the others. The ratio is then what one hub core passes"
  echo "against what the client and vendor manage directly, and the hub's CPU time per call (from /proc)"
  echo "is the capacity-planning figure: calls/s per core ≈ 1 s ÷ CPU per call."
  echo
  for c in 1 8; do
    echo '```'
    ./bin/toolhub bench --split --pin --concurrency "$c" --duration "${BENCH_DURATION:-5s}" 2>/dev/null
    echo '```'
  done
  echo "## The hop: direct, bare ReverseProxy, toolhub (\`toolhub bench --hop\`)"
  echo
  echo "One MCP \`tools/call\` of a small text tool (\`test_simple_text\` of mcp-go's conformance server, built from"
  echo "the module cache), made by the same load generator in one run: (1) directly to the vendor; (2) through a bare"
  echo "\`net/http/httputil.ReverseProxy\` (keep-alive to the vendor, nothing else), the cost of a hop that does nothing;"
  echo "(3) through toolhub \`/mcp/vendors/{vendor}\` with every governance step. The proxy and the hub each run in their"
  echo "own process (the proxy is the toolhub binary's hidden \`bench proxy\`). Shapes: *shared*, every process on every"
  echo "CPU; *pinned*, the hop (proxy or hub) alone on the last CPU, the load generator and the vendor on the others."
  echo
  echo "Columns: calls/s and the p50 and p99 latency seen by the load generator with c clients (one session each);"
  echo "errors, calls that failed; hop CPU/call, the proxy's or the hub's user+system CPU time (from /proc/<pid>/stat)"
  echo "over the measured phase divided by its calls; vendor and client CPU/call, the same for the vendor and for the"
  echo "load generator (on the pinned shape they share the CPUs the hop does not have, so a hop that makes them work"
  echo "more lowers its calls/s); then toolhub against the proxy in the same shape and c: calls/s"
  echo "ratio, p50 difference in µs, CPU-per-call ratio. Targets (issue 30): toolhub ≥ 1.0× the proxy's calls/s at"
  echo "c=16 in both shapes; hub CPU per call ≤ 1.0× the proxy's pinned at c=16; ≤ +20 µs p50 over the proxy at c=1,"
  echo "pinned and shared (c=64, and CPU per call in the other rows, against issue 13's 0.9× and 1.2×); 1,000 client"
  echo "sessions held open (each initialized, its GET stream open, one call made) cost ≤ 100 MB of hub RSS"
  echo "(VmRSS from /proc/<pid>/status, in a fresh hub, before and after)."
  echo
  echo "Each phase is measured in three rounds taken turn about (direct, proxy, toolhub, direct, …), so that a slow"
  echo "spell of the machine does not fall on one path alone: this VM's speed drifts by tens of percent within a"
  echo "minute, and the c=1 rows move by ±100 µs between runs. The table is measured ${BENCH_HOP_RUNS:-2} times: compare"
  echo "the ratios within a run, across runs."
  echo
  vendor_bin=()
  if go build -o bin/conformance-server github.com/mark3labs/mcp-go/examples/conformance >/dev/null 2>&1; then
    vendor_bin=(--vendor-bin bin/conformance-server)
  fi
  runs=${BENCH_HOP_RUNS:-2}
  for run in $(seq 1 "$runs"); do
    sessions=0
    if [ "$run" = "$runs" ]; then sessions=${BENCH_SESSIONS:-1000}; fi
    echo "### Run $run of $runs"
    echo
    ./bin/toolhub bench --hop ${vendor_bin[@]+"${vendor_bin[@]}"} --duration "${BENCH_DURATION:-5s}" --sessions "$sessions" 2>/dev/null
    echo
  done
  if [ "${BENCH_SOAK:-1}" != 0 ]; then
    bash scripts/soak.sh --print
  fi
  echo "## Fault drills (\`toolhub drill\`)"
  echo
  echo "weather-a breaks under load and weather-b takes over: breaker defaults (open on 5 failures in a row"
  echo "or ≥50% of ≥20 calls in 10 s); the drill shortens the cool-down to 500 ms and the ramp steps to 200 ms"
  echo "so recovery fits in the run. Then Redis and PostgreSQL are cut (through a proxy) under load, and one of"
  echo "three \`toolhub serve\` processes on one Redis and PostgreSQL is killed with SIGKILL while jobs run."
  echo
  echo '```'
  ./bin/toolhub drill --rate 200 2>/dev/null
  echo '```'
  echo
  echo "## Vendor outage (\`toolhub drill outage --duration 60s\`)"
  echo
  echo "Both image vendors answer HTTP 500 for 60 s under 20 calls/s of image.generate (half new prompts, queued;"
  echo "half repeats, answered stale), then come back. Targets: every queued job completes, each pushed once"
  echo "and charged once; median recovery → completion ≤ 2 s, p99 ≤ 10 s."
  echo
  echo '```'
  ./bin/toolhub drill outage --duration "${BENCH_OUTAGE:-60s}" 2>/dev/null
  echo '```'
  echo
  echo "## Limiter accuracy across instances"
  echo
  echo "Three hubs on one Redis limit push calls as fast as it lets them; admitted calls (timed by send time)"
  echo "against what the limit allows over the span from the first to the last: burst + rate·span."
  echo
  echo '```'
  ./bin/toolhub bench --limiter --hubs 3 --limit-rate 100 --limit-burst 50 --duration "${BENCH_LIMITER_SPAN:-5s}" 2>/dev/null
  echo '```'
  echo
  echo "## Monthly report over 10 million events"
  echo
  if [ "${BENCH_10M:-}" = 1 ]; then
    echo '```'
    TOOLHUB_BENCH_EVENTS=10000000 go test -run '^$' -bench MonthlyReport -benchtime 3x -timeout 60m ./billing/sqlledger ./billing/pgledger 2>&1 | grep -E '^(Benchmark|pkg:)|loaded'
    echo '```'
  else
    echo "Loading 10M events takes a few minutes per database, so it runs only with \`BENCH_10M=1 make bench\`"
    echo "(group by tenant, vendor, tool over a month; target ≤ 1 s). The 1M-event rows above are from this run."
  fi
} | tee "$out"
mkdir -p docs
cp "$out" docs/benchmarks.md
echo "wrote docs/benchmarks.md" >&2
