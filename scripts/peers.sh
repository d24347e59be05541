#!/usr/bin/env bash
# Installs the pinned npm peers (test/peers/package-lock.json) once into
# .cache/peers; later runs reuse them while the lock file is unchanged.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dest=${TOOLHUB_PEERS:-$root/.cache/peers}
stamp="$dest/.lock.sha256"
want=$(sha256sum "$root/test/peers/package-lock.json" | cut -d' ' -f1)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -d "$dest/node_modules" ]; then
  exit 0
fi
command -v npm >/dev/null || { echo "peers: npm is missing; install nodejs and npm" >&2; exit 1; }
echo "peers: installing the pinned npm peers into $dest" >&2
mkdir -p "$dest"
cp "$root/test/peers/package.json" "$root/test/peers/package-lock.json" "$dest/"
(cd "$dest" && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error)
echo "$want" > "$stamp"
