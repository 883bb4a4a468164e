#!/usr/bin/env bash
# Runs every test of goodput, after installing what the tests need that Go
# does not bring: Debian's prometheus and promtool (the Prometheus source is
# tested against a real server) and tmux (the terminal review is tested in a
# real terminal). With those present the tests that use them fail, never
# skip, when they cannot run.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
{ command -v prometheus && command -v promtool; } >/dev/null 2>&1 || need+=(prometheus)
command -v tmux >/dev/null 2>&1 || need+=(tmux)
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
fi

export REQUIRE_PROMETHEUS=1 REQUIRE_TMUX=1
go vet ./...
go test -count=1 -timeout 20m ./...

# Fuzz every reader of untrusted input for a short budget each (about
# 13 × 10 s). A crash fails the run and leaves its input under the
# package's testdata/fuzz/; commit it with the fix, so it is replayed by
# every `go test` from then on.
fuzztime="${FUZZTIME:-10s}"
while read -r pkg target; do
  echo "fuzz $pkg $target ($fuzztime)" >&2
  if ! out=$(go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" "./$pkg" 2>&1); then
    echo "$out" >&2
    exit 1
  fi
done <<'TARGETS'
sources/requestlog FuzzRead
sources/requestlog FuzzParseFloat
sources/requestlog FuzzRFC3339
sources/benchfile FuzzVLLM
sources/benchfile FuzzSGLang
sources/benchfile FuzzLLMPerf
sources/benchfile FuzzGenAIPerf
sources/benchfile FuzzAIPerf
sources/benchfile FuzzInferencePerf
sources/exposition FuzzRead
sources/costfile FuzzRead
policies FuzzParse
sources/sim FuzzParseScenario
TARGETS
