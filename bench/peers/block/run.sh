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
# shellcheck source=../go_build.sh
source "$here/../go_build.sh"
go_build "$here" block.go block
GOMAXPROCS="$workers" "$built" "$n" "$ms"
