# toolhub — `make help` lists the targets.
SHELL := bash
GO ?= go
BIN := bin/toolhub
PEERS := $(CURDIR)/.cache/peers
export TOOLHUB_PEERS := $(PEERS)
# Short fuzzing counts executions, not seconds: a timed run on a loaded 2-core
# machine can end in a spurious "context deadline exceeded" from the fuzz engine.
FUZZTIME ?= 1000x
PKGS := ./...

.PHONY: help build run test test-go setup services peers chromium fuzz-short fuzz bench soak lint clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-10s %s\n", $$1, $$2}'

# Go stamps the revision itself in a git checkout (-buildvcs=auto), but not in
# a git worktree (.git is a file there): main.revision stands in.
REVISION := $(shell git rev-parse -q --verify HEAD 2>/dev/null)

build: ## build bin/toolhub
	$(GO) build -buildvcs=auto -ldflags "-X main.revision=$(REVISION)" -o $(BIN) ./cmd/toolhub

run: build ## run toolhub on its embedded defaults with the example vendors (127.0.0.1:8080)
	./$(BIN) serve

services: ## make sure Redis and PostgreSQL are up (start or install them)
	@bash scripts/services.sh

peers: ## install the pinned npm peers (MCP SDK client, server-everything) once into .cache/peers
	@bash scripts/peers.sh

chromium: ## make sure headless Chromium is installed (the dashboard's end-to-end test, test/ui)
	@bash scripts/chromium.sh

setup: ## everything make test needs: one apt transaction for what is missing, npm peers and Go modules alongside
	@GO=$(GO) bash scripts/setup.sh

# What runs alongside what: while set-up installs what is missing (apt,
# npm: mostly waiting on downloads), every package is compiled with the race
# detector at low priority, so the race tests find it built; go vet and the
# fuzz binaries are built at idle priority (nice 19) while the race tests
# run, on the CPU time the tests leave idle, and their output is shown
# after the tests. go vet is given -race so that it type-checks against the
# packages the race tests compile (no file here has a race build tag, so
# it vets the same files; make lint vets without it): with a cold build cache that spares one whole
# compile of the tree (registry and billing: 90 s of vet after the race
# build became 20 s). The last line gives each phase's time.
test: ## run every test (unit, contract, interop, fuzz seeds + short fuzzing)
	@set -euo pipefail; t0=$$SECONDS; \
	bins=$$(mktemp -d); pids=; trap 'kill $$pids 2>/dev/null || :; rm -rf "$$bins"' EXIT; \
	nice -n 10 $(GO) build -race $(PKGS) >$$bins/warm.log 2>&1 & warm=$$!; pids=$$warm; \
	$(MAKE) --no-print-directory setup build; wait $$warm || :; t1=$$SECONDS; \
	( nice -n 19 $(GO) vet -race $(PKGS) >$$bins/vet.log 2>&1; echo $$? >$$bins/vet.rc; \
	  FUZZ_BINDIR=$$bins GO=$(GO) nice -n 19 bash scripts/fuzz.sh --build-only $(FUZZ_TARGETS) >$$bins/build.log 2>&1 ) & builder=$$!; pids=$$builder; \
	echo "$(GO) test -race -count=1 -timeout 15m $(PKGS)"; \
	$(GO) test -race -count=1 -timeout 15m $(PKGS); t2=$$SECONDS; \
	echo "$(GO) vet -race $(PKGS)"; \
	if ! wait $$builder; then cat $$bins/vet.log $$bins/build.log >&2; exit 1; fi; pids=; \
	cat $$bins/vet.log; [ "$$(cat $$bins/vet.rc)" = 0 ] || exit 1; \
	cat $$bins/build.log; t3=$$SECONDS; \
	FUZZ_BINDIR=$$bins GO=$(GO) FUZZTIME=$(FUZZTIME) bash scripts/fuzz.sh $(FUZZ_TARGETS); t4=$$SECONDS; \
	echo "make test: set-up $$((t1-t0))s, race tests $$((t2-t1))s, vet and fuzz builds left after the tests $$((t3-t2))s, short fuzzing $$((t4-t3))s; total $$((t4-t0))s"

# Each fuzz target runs for FUZZTIME (one target per go test -fuzz run).
FUZZ_TARGETS := \
	./registry:FuzzCompileSchema \
	./registry:FuzzApplyMappings \
	./api:FuzzMCPFrontDoor \
	./api:FuzzRESTCall \
	./api:FuzzToolCalls \
	./internal/config:FuzzCheck \
	./netguard:FuzzCheckURL \
	./hub/cache:FuzzDecode \
	./billing:FuzzParseMicros \
	./billing:FuzzDecodeSpillLine \
	./a2a:FuzzParseCard \
	./servers:FuzzFastResponse \
	./internal/x/jsonscan:FuzzScan \
	./api:FuzzScanEnvelope \
	./auth/oauth:FuzzVerify \
	./internal/config:FuzzParse \
	./servers:FuzzToolsListAnswer \
	./api:FuzzFastPathMatchesMCPGo \
	./hub:FuzzProvenanceAppendJSON \
	./registry:FuzzQuickSchema \
	./billing:FuzzAppendLine \
	./billing:FuzzAppendWALLine \
	./billing:FuzzReadWAL \
	./billing/internal/ledgersql:FuzzUnitsJSON \
	./orchestrator:FuzzPlanOffline \
	./internal/x/jsonscan:FuzzRepeatedKey \
	./servers:FuzzResultValidatedIsSent \
	./registry/poison:FuzzScanText \
	./registry/mcpregistry:FuzzDecode

fuzz-short: ## run every fuzz target for FUZZTIME (1000 executions each; one build per package)
	@GO=$(GO) FUZZTIME=$(FUZZTIME) bash scripts/fuzz.sh $(FUZZ_TARGETS)

fuzz: ## fuzz every target longer (FUZZ_LONG=2m each)
	@$(MAKE) --no-print-directory fuzz-short FUZZTIME=$(FUZZ_LONG)

bench: services peers build ## run the benchmarks and the load generator; writes docs/benchmarks.md
	@bash scripts/bench.sh

soak: build ## hold toolhub at 70% of saturation for 4m, sampling RSS, goroutines, p99 every 10s; into docs/benchmarks.md
	@bash scripts/soak.sh

STATICCHECK_VERSION := v0.8.2
STATICCHECK := $(shell $(GO) env GOPATH)/bin/staticcheck

lint: ## gofmt, go vet, staticcheck (pinned, installed by go install), go mod tidy -diff
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	@if ! $(STATICCHECK) -version 2>/dev/null | grep -q '$(STATICCHECK_VERSION:v%=%)'; then \
	  echo "lint: installing staticcheck $(STATICCHECK_VERSION)"; \
	  $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION); fi
	$(STATICCHECK) $(PKGS)
	$(GO) mod tidy -diff

clean: ## remove build output and caches (not the data folder)
	rm -rf bin .cache
