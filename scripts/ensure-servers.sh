#!/usr/bin/env bash
# The servers the test suites start: redis-server (required), redis-sentinel and ZooKeeper (the suites that need them
# fall back or are skipped without them). `npm test` and .ci/run call this first.
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
for pair in "$@"; do
  have "${pair%%=*}" || need+=("${pair#*=}")
done
[ ${#need[@]} -eq 0 ] && exit 0

if [ -z "${HOLDFAST_NO_INSTALL:-}" ] && [ "$(id -u)" = 0 ] && have apt-get; then
  echo "installing: ${need[*]}"
  if apt-get update -qq && apt_install "${need[@]}"; then exit 0; fi
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
    exit 0
    ;;
esac
