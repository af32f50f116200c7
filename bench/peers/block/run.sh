#!/usr/bin/env bash
# Runs issue 19's blocking experiment in Go: run.sh N SLEEP_MS [WORKERS]
# Prints one JSON line {"completed":N,"seconds":S,"rss_bytes":B,"baseline_rss_bytes":B0,
# "peak_threads":T} (what `ito-bench block --impl go` reads), or one line starting with
# "skipped:" when Go is missing. WORKERS (default 2) is GOMAXPROCS.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
n="${1:-}"
ms="${2:-}"
workers="${3:-2}"
if [[ ! "$n" =~ ^[1-9][0-9]*$ || ! "$ms" =~ ^[0-9]+$ || ! "$workers" =~ ^[1-9][0-9]*$ ]]; then
  echo "usage: run.sh N SLEEP_MS [WORKERS]" >&2
  exit 2
fi
go="$(command -v go || true)"
[[ -z "$go" && -x /usr/local/go/bin/go ]] && go=/usr/local/go/bin/go
if [[ -z "$go" ]]; then
  echo "skipped: go is not installed"
  exit 0
fi
out="${TMPDIR:-/tmp}/ito-block-go"
mkdir -p "$out"
# One file, standard library only: no module, no network.
(cd "$here" && GO111MODULE=off GOCACHE="$out/cache" "$go" build -o "$out/block" block.go)
GOMAXPROCS="$workers" "$out/block" "$n" "$ms"
