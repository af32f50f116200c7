# Sourced by the Go peers' run.sh. go_build DIR FILE TAG: builds DIR/FILE (one file, standard
# library only: no module, no network) into $TMPDIR/ito-TAG-go/ and sets `built` to the
# binary; prints "skipped: go is not installed" and exits 0 when there is no Go.
go_build() {
  local dir="$1" file="$2" tag="$3" go out
  go="$(command -v go || true)"
  [[ -z "$go" && -x /usr/local/go/bin/go ]] && go=/usr/local/go/bin/go
  if [[ -z "$go" ]]; then
    echo "skipped: go is not installed"
    exit 0
  fi
  out="${TMPDIR:-/tmp}/ito-$tag-go"
  mkdir -p "$out"
  built="$out/${file%.go}"
  (cd "$dir" && GO111MODULE=off GOCACHE="$out/cache" "$go" build -o "$built" "$file")
}
