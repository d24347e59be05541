#!/usr/bin/env bash
# What `make test` needs, set up at once: the npm peers install (peers.sh)
# and the Go modules download run in the background while one apt-get
# transaction installs whatever of Redis, PostgreSQL and Chromium is
# missing; then services.sh starts Redis and PostgreSQL and chromium.sh
# checks Chromium. Each step skips what is already there.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
go=${GO:-go}
log() { echo "setup: $*" >&2; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

bash "$root/scripts/peers.sh" & peers=$!
(cd "$root" && $go mod download) & mods=$!

missing=()
command -v redis-server >/dev/null || missing+=(redis-server redis-tools)
ls /etc/postgresql/*/main >/dev/null 2>&1 ||
  pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null || missing+=(postgresql postgresql-client)
if ! { [ -n "${CHROMIUM:-}" ] && command -v "$CHROMIUM" >/dev/null; } &&
   ! command -v chromium >/dev/null && ! command -v chromium-browser >/dev/null; then
  missing+=(chromium)
fi
if [ ${#missing[@]} -gt 0 ]; then
  log "installing ${missing[*]} with apt (one transaction)"
  as_root apt-get update -qq
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq "${missing[@]}" >/dev/null
fi
bash "$root/scripts/services.sh"
bash "$root/scripts/chromium.sh"
wait "$peers" || { log "npm peers failed to install"; exit 1; }
wait "$mods" || { log "go mod download failed"; exit 1; }
