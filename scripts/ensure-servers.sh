#!/usr/bin/env bash
# The servers the test suites start: redis-server (required), redis-sentinel and ZooKeeper (the suites that need them
# fall back or are skipped without them), and PostgreSQL with pgbouncer (the PostgreSQL suites are skipped when no
# server answers). `npm test` and .ci/run call this first.
#
# PostgreSQL: the suites use HOLDFAST_POSTGRES_URL (default postgres://postgres@127.0.0.1:5432/postgres). When that
# is a server on this machine (127.0.0.1 or localhost) and nothing answers on its port, the Debian cluster on that port
# is started (pg_ctlcluster). A cluster this script has just installed is also given `trust` for local TCP (127.0.0.1
# and ::1), since the Debian default there asks for a password the tests do not have; a cluster that was already
# there is never reconfigured. pgbouncer is only installed: the tests start their own, and the package's service is
# disabled right after the install.
#
#   scripts/ensure-servers.sh [binary=package ...]    ensure the servers, and the extra binaries named (a command or
#                                                     a path, and the Debian package that provides it)
#   scripts/ensure-servers.sh --apt <apt-get install arguments>    install with apt-get, starting no service
#
# What is missing is installed with apt-get where that is allowed (root, apt-get present, and HOLDFAST_NO_INSTALL
# unset); otherwise this stops at once, saying the one command to run, rather than let every suite fail.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive

# Installing a server package must not start a service (a valkey-server on 6379 would collide with a Redis already
# there): deny service starts while apt runs, unless the machine already has a policy.
apt_install() {
  local policy=/usr/sbin/policy-rc.d added=
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod +x "$policy" && added=1
  fi
  apt-get install -y -qq "$@" || { [ -n "$added" ] && rm -f "$policy"; return 1; }
  if [ -n "$added" ]; then rm -f "$policy"; fi
}

if [ "${1:-}" = --apt ]; then
  shift
  apt_install "$@"
  exit
fi

have() {
  case "$1" in
    /*) [ -e "$1" ] ;;
    *) command -v "$1" >/dev/null 2>&1 ;;
  esac
}

need=()
have "${HOLDFAST_REDIS_SERVER:-redis-server}" || need+=(redis-server)
have redis-sentinel || need+=(redis-sentinel)
have /usr/share/java/zookeeper.jar || need+=(zookeeper)
# the PostgreSQL server the suites use, when it is on this machine: its port, else empty
pg_port=5432
if [ -n "${HOLDFAST_POSTGRES_URL:-}" ]; then
  pg_port=
  if [[ "$HOLDFAST_POSTGRES_URL" =~ ^postgres(ql)?://([^@/]*@)?(127\.0\.0\.1|localhost)(:([0-9]+))?(/|\?|$) ]]; then
    pg_port=${BASH_REMATCH[5]:-5432}
  fi
fi
if [ -n "$pg_port" ] && { ! have pg_ctlcluster || ! have psql; }; then need+=(postgresql); fi
have pgbouncer || need+=(pgbouncer)
for pair in "$@"; do
  have "${pair%%=*}" || need+=("${pair#*=}")
done
# Starts the cluster on $pg_port when nothing answers there (after a fresh install: trust for local TCP first).
ensure_postgres() {
  local fresh=$1 version cluster status hba
  [ -n "$pg_port" ] && have pg_lsclusters || return 0
  if pg_answers; then [ -z "$fresh" ] && return 0; fi
  read -r version cluster status < <(pg_lsclusters --no-header 2>/dev/null | while read -r v c p s _; do
    if [ "$p" = "$pg_port" ]; then echo "$v $c $s"; break; fi
  done) || true
  if [ -z "${cluster:-}" ]; then
    echo "holdfast: no PostgreSQL cluster on port $pg_port (\`pg_createcluster <version> main --port $pg_port --start\` makes one): the PostgreSQL suites are skipped" >&2
    return 0
  fi
  if [ -n "$fresh" ]; then
    hba="${PG_CLUSTER_CONF_ROOT:-/etc/postgresql}/$version/$cluster/pg_hba.conf"
    if [ -f "$hba" ]; then
      echo "PostgreSQL $version/$cluster: trust for local TCP connections ($hba)"
      sed -i -E 's#^(host[[:space:]]+all[[:space:]]+all[[:space:]]+(127\.0\.0\.1/32|::1/128)[[:space:]]+)[A-Za-z0-9-]+#\1trust#' "$hba"
      if [ "$status" = online ]; then pg_ctlcluster --skip-systemctl-redirect "$version" "$cluster" reload; fi
    fi
  fi
  pg_answers && return 0
  echo "starting PostgreSQL $version/$cluster on port $pg_port"
  if ! pg_ctlcluster --skip-systemctl-redirect "$version" "$cluster" start; then
    echo "holdfast: PostgreSQL $version/$cluster did not start (\`pg_ctlcluster $version $cluster start\` as root): the PostgreSQL suites are skipped" >&2
    return 0
  fi
  for _ in $(seq 1 50); do pg_answers && return 0; sleep 0.1; done
  echo "holdfast: PostgreSQL $version/$cluster started but does not answer on port $pg_port" >&2
}
pg_answers() {
  if have pg_isready; then pg_isready -q -h 127.0.0.1 -p "$pg_port" -t 2; else (exec 3<>"/dev/tcp/127.0.0.1/$pg_port") 2>/dev/null; fi
}

if [ ${#need[@]} -eq 0 ]; then
  ensure_postgres ''
  exit 0
fi

if [ -z "${HOLDFAST_NO_INSTALL:-}" ] && [ "$(id -u)" = 0 ] && have apt-get; then
  echo "installing: ${need[*]}"
  if apt-get update -qq && apt_install "${need[@]}"; then
    case " ${need[*]} " in
      *" pgbouncer "*)
        # the tests start their own pgbouncer: the package's service is not to start at boot
        if have update-rc.d; then update-rc.d pgbouncer disable >/dev/null 2>&1 || true; fi
        if have systemctl; then systemctl disable --quiet pgbouncer.service >/dev/null 2>&1 || true; fi
        ;;
    esac
    case " ${need[*]} " in
      *" postgresql "*) ensure_postgres fresh ;;
      *) ensure_postgres '' ;;
    esac
    exit 0
  fi
  echo "holdfast: apt-get could not install ${need[*]}" >&2
  exit 1
fi

if have apt-get; then
  command="sudo apt-get install -y ${need[*]}"
else
  command="install ${need[*]} with your package manager (or set HOLDFAST_REDIS_SERVER to a redis-server binary)"
fi
case " ${need[*]} " in
  *" redis-server "*)
    echo "holdfast: the tests need redis-server, which is not installed: run \`$command\`" >&2
    exit 1
    ;;
  *)
    echo "holdfast: ${need[*]} not installed: the suites that need it fall back or are skipped (\`$command\` installs it)" >&2
    ensure_postgres ''
    exit 0
    ;;
esac
