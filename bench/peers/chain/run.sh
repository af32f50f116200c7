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
    go="$(command -v go || true)"
    [[ -z "$go" && -x /usr/local/go/bin/go ]] && go=/usr/local/go/bin/go
    if [[ -z "$go" ]]; then
      echo "skipped: go is not installed"
      exit 0
    fi
    out="${TMPDIR:-/tmp}/ito-chain-go"
    mkdir -p "$out"
    # One file, standard library only: no module, no network.
    (cd "$here" && GO111MODULE=off GOCACHE="$out/cache" "$go" build -o "$out/chain" chain.go)
    GOMAXPROCS="$workers" "$out/chain" "$n"
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
