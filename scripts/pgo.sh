#!/usr/bin/env bash
# Regenerates cmd/goodput/default.pgo, the CPU profile `go build` uses for
# profile-guided optimization of the goodput binary (Go's -pgo=auto): three
# streaming judges of the bench's 1,000,000-record-per-arm files, the
# heaviest path, and one exact judge of the bundled example. Run from the
# repository's root after changes to the scan or the aggregate; a stale
# profile still builds, it only helps less. Takes about ten seconds.
set -euo pipefail
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
go build -o "$dir/goodput" ./cmd/goodput
"$dir/goodput" bench --records 1000000 --runs 1 --exact-max 1 --script-max 1 --keep --dir "$dir/bench" > /dev/null 2>&1
b="$dir/bench/1000000"
judge() { # exit codes 0-3 are verdicts; 4 and up are failures
  local rc=0
  "$dir/goodput" judge "$@" > /dev/null 2>&1 || rc=$?
  if [ "$rc" -gt 3 ]; then echo "pgo.sh: goodput judge $* exited $rc" >&2; exit 1; fi
}
for i in 1 2 3; do
  judge --cpuprofile "$dir/stream$i.pprof" --stream --format json --baseline "$b/baseline.jsonl" --canary "$b/canary.jsonl"
done
judge --cpuprofile "$dir/exact.pprof" --exact --format json --baseline testdata/example/baseline.jsonl --canary testdata/example/canary.jsonl
go tool pprof -proto "$dir"/stream1.pprof "$dir"/stream2.pprof "$dir"/stream3.pprof "$dir"/exact.pprof > cmd/goodput/default.pgo 2> /dev/null
echo "wrote cmd/goodput/default.pgo ($(wc -c < cmd/goodput/default.pgo) bytes)" >&2
