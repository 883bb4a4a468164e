#!/usr/bin/env bash
# Runs every test of goodput, after installing what the tests need that Go
# does not bring: Debian's prometheus and promtool (the Prometheus source is
# tested against a real server), clickhouse-server (so is the ClickHouse
# source) and tmux (the terminal review is tested in a real terminal). With
# those present the tests that use them fail, never skip, when they cannot
# run.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
{ command -v prometheus && command -v promtool; } >/dev/null 2>&1 || need+=(prometheus)
command -v tmux >/dev/null 2>&1 || need+=(tmux)
{ command -v clickhouse-server || test -x /usr/sbin/clickhouse-server; } >/dev/null 2>&1 || need+=(clickhouse-server)
if [ ${#need[@]} -gt 0 ]; then
  sudo=""
  if [ "$(id -u)" != 0 ]; then
    if command -v sudo >/dev/null 2>&1; then sudo=sudo; else
      echo "scripts/test.sh: please install the Debian packages: ${need[*]}" >&2; exit 1
    fi
  fi
  echo "installing ${need[*]} (Debian packages, no recommends)…" >&2
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq -o DPkg::Lock::Timeout=600 \
    --no-install-recommends "${need[@]}" >/dev/null
  # the package may start a daemon on :9090 where services are allowed; the
  # tests start their own servers on loopback ports, so stop it
  $sudo service prometheus stop >/dev/null 2>&1 || true
  $sudo service clickhouse-server stop >/dev/null 2>&1 || true
fi

export REQUIRE_PROMETHEUS=1 REQUIRE_TMUX=1 REQUIRE_CLICKHOUSE=1
go vet ./...
go test -count=1 -timeout 20m ./...

# Fuzz every reader of untrusted input for a short budget each (a few
# seconds apiece, about two minutes in all). A crash fails the run and leaves
# its input under the package's testdata/fuzz/; commit it with the fix, so it
# is replayed by every `go test` from then on.
#
# The budget is a count of calls, sized per target from its rate on a loaded
# 2-core machine, not a duration: Go 1.26's fuzz coordinator can end a clean
# run with a bare "context deadline exceeded" when a duration -fuzztime
# expires while a worker is mid-call (golang/go#75804, fixed in Go 1.27), and
# it did so twice in a row on one target. A count has no deadline to race.
# FUZZTIME overrides every budget (e.g. FUZZTIME=5m for a long local run);
# a duration there can meet the race again, so a run that ends with that bare
# message, wrote no input and failed nothing else is tried once more.
fuzzone() {
  go test -run '^$' -fuzz "^${2}\$" -fuzztime "${FUZZTIME:-$3}" "./$1" 2>&1
}
while read -r pkg target budget; do
  echo "fuzz $pkg $target (${FUZZTIME:-$budget})" >&2
  corpus="$pkg/testdata/fuzz/$target"
  before=$(find "$corpus" -type f 2>/dev/null | wc -l || true)
  if ! out=$(fuzzone "$pkg" "$target" "$budget"); then
    after=$(find "$corpus" -type f 2>/dev/null | wc -l || true)
    if [ "$before" = "$after" ] && ! grep -q 'Failing input written' <<<"$out" &&
      [ "$(grep -c -- '--- FAIL' <<<"$out")" = 1 ] &&
      grep -A1 -- '--- FAIL' <<<"$out" | tail -1 | grep -qx '[[:space:]]*context deadline exceeded'; then
      echo "fuzz $pkg $target: the Go fuzz coordinator's deadline race (golang/go#75804), no input found; running it again" >&2
      if out=$(fuzzone "$pkg" "$target" "$budget"); then
        continue
      fi
    fi
    echo "$out" >&2
    exit 1
  fi
done <<'TARGETS'
sources/requestlog FuzzRead 20000x
sources/requestlog FuzzParseFloat 400000x
sources/requestlog FuzzRFC3339 400000x
sources/requestlog FuzzFastLine 300000x
sources/requestlog FuzzParseChunk 250000x
sources/benchfile FuzzVLLM 100000x
sources/benchfile FuzzSGLang 150000x
sources/benchfile FuzzLLMPerf 80000x
sources/benchfile FuzzGenAIPerf 60000x
sources/benchfile FuzzAIPerf 70000x
sources/benchfile FuzzInferencePerf 50000x
sources/exposition FuzzRead 20000x
sources/costfile FuzzRead 8000x
policies FuzzParse 50000x
sources/sim FuzzParseScenario 30000x
sources/clickhouse FuzzQuote 100000x
TARGETS
