#!/usr/bin/env bash
# Makes sure the services the tests use are up: Redis on 127.0.0.1:6379 and
# PostgreSQL on 127.0.0.1:5432 (trust auth, database "test"). Starts them if
# they are stopped; installs them with apt on a machine that lacks them.
set -euo pipefail

log() { echo "services: $*" >&2; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }
apt_install() {
  log "installing $* with apt"
  as_root apt-get update -qq
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq "$@" >/dev/null
}

redis_up() { redis-cli -h 127.0.0.1 -p 6379 ping 2>/dev/null | grep -q PONG; }
pg_up() { pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; }

# --- Redis
if ! redis_up; then
  command -v redis-server >/dev/null || apt_install redis-server redis-tools
  log "starting redis"
  as_root mkdir -p /var/lib/redis /var/log/redis
  as_root redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
    --dir /var/lib/redis --logfile /var/log/redis/ci.log
  for _ in $(seq 50); do redis_up && break; sleep 0.1; done
  redis_up || { log "redis did not come up"; exit 1; }
fi

# --- PostgreSQL
if ! pg_up; then
  if ! ls /etc/postgresql/*/main >/dev/null 2>&1; then
    apt_install postgresql postgresql-client
  fi
  ver=$(ls /etc/postgresql | sort -V | tail -1)
  hba=/etc/postgresql/$ver/main/pg_hba.conf
  if ! grep -q "toolhub: trust on loopback" "$hba"; then
    log "allowing trust auth on loopback ($hba)"
    as_root sed -i '1i # toolhub: trust on loopback\nhost all all 127.0.0.1/32 trust\nhost all all ::1/128 trust\nlocal all all trust' "$hba"
  fi
  log "starting postgresql $ver"
  as_root pg_ctlcluster --skip-systemctl-redirect "$ver" main start || true
  for _ in $(seq 100); do pg_up && break; sleep 0.1; done
  pg_up || { log "postgresql did not come up"; exit 1; }
fi
if ! psql -h 127.0.0.1 -U postgres -d test -Atc 'select 1' >/dev/null 2>&1; then
  log "creating database test"
  psql -h 127.0.0.1 -U postgres -d postgres -c 'create database test' >/dev/null
fi
log "redis and postgresql are up"
