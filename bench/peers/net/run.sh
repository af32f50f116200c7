#!/usr/bin/env bash
# Runs issue 18's echo server in Go: run.sh ADDR [WORKERS]. Prints "listening on ADDR" once it
# accepts and serves until killed (what `ito-bench net echo --impl go` starts), or one line
# starting with "skipped:" when Go is missing. WORKERS (default 1) is GOMAXPROCS.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
addr="${1:-}"
workers="${2:-1}"
if [[ -z "$addr" || ! "$workers" =~ ^[1-9][0-9]*$ ]]; then
  echo "usage: run.sh ADDR [WORKERS]" >&2
  exit 2
fi
# shellcheck source=../go_build.sh
source "$here/../go_build.sh"
go_build "$here" echo.go net
GOMAXPROCS="$workers" exec "$built" "$addr"
