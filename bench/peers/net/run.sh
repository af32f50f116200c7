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
go="$(command -v go || true)"
[[ -z "$go" && -x /usr/local/go/bin/go ]] && go=/usr/local/go/bin/go
if [[ -z "$go" ]]; then
  echo "skipped: go is not installed"
  exit 0
fi
out="${TMPDIR:-/tmp}/ito-net-go"
mkdir -p "$out"
# One file, standard library only: no module, no network.
(cd "$here" && GO111MODULE=off GOCACHE="$out/cache" "$go" build -o "$out/echo" echo.go)
GOMAXPROCS="$workers" exec "$out/echo" "$addr"
