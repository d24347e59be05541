#!/usr/bin/env bash
# Makes sure headless Chromium is installed for the dashboard's end-to-end
# test (test/ui): installs Debian's chromium package with apt when neither
# $CHROMIUM nor chromium is found.
set -euo pipefail

log() { echo "chromium: $*" >&2; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

if [ -n "${CHROMIUM:-}" ] && command -v "$CHROMIUM" >/dev/null; then exit 0; fi
if command -v chromium >/dev/null || command -v chromium-browser >/dev/null; then exit 0; fi

log "installing chromium with apt"
as_root apt-get update -qq
DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq chromium >/dev/null
command -v chromium >/dev/null || { log "chromium is still missing after apt-get install"; exit 1; }
log "$(chromium --version 2>/dev/null || echo installed)"
