#!/usr/bin/env bash
# Runs document 001's chain in another language: run.sh go|elixir N [WORKERS]
# Prints one JSON line {"result":N,"seconds":S,"rss_bytes":B} (what `ito-bench chain --impl
# go,elixir` reads), or one line starting with "skipped:" when the toolchain is missing.
# WORKERS (default 2) bounds the runtime's threads: GOMAXPROCS for Go, +S for the BEAM.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
impl="${1:-}"
n="${2:-}"
workers="${3:-2}"
if [[ -z "$impl" || ! "$n" =~ ^[1-9][0-9]*$ || ! "$workers" =~ ^[1-9][0-9]*$ ]]; then
  echo "usage: run.sh go|elixir N [WORKERS]" >&2
  exit 2
fi
case "$impl" in
  go)
    # shellcheck source=../go_build.sh
    source "$here/../go_build.sh"
    go_build "$here" chain.go chain
    GOMAXPROCS="$workers" "$built" "$n"
    ;;
  elixir)
    if ! command -v elixir >/dev/null 2>&1; then
      echo "skipped: elixir is not installed"
      exit 0
    fi
    elixir --erl "+P $((n + 100000)) +S $workers:$workers" "$here/chain.exs" "$n"
    ;;
  *)
    echo "run.sh: unknown impl '$impl' (go or elixir)" >&2
    exit 2
    ;;
esac
