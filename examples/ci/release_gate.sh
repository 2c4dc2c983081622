#!/usr/bin/env bash
# The release gate a CI job runs (examples/ci/release-gate.yml): the study of examples/release_gate.toml, then
# `probe gate` of the candidate against the baseline, then the candidate's report. Extra arguments go to
# `probe run` (the test runs it with `--backend replay --answers FILE`). Exit code: probe gate's (0 pass,
# 1 fail, 3 inconclusive, 4 a fail Holm does not confirm where the policy asks for it).
#   examples/ci/release_gate.sh OUT_DIR [probe run flags]
set -euo pipefail
out="${1:?usage: release_gate.sh OUT_DIR [probe run flags]}"
shift
probe="${PROBE:-probe}"
policy="$(dirname "$0")/../release_gate.toml"
mkdir -p "$out"
"$probe" run --config "$policy" --db "$out/probe.duckdb" --yes --quiet "$@"
status=0
"$probe" gate release-candidate --baseline release-baseline --policy "$policy" --db "$out/probe.duckdb" \
  --junit "$out/gates.xml" -o "$out" || status=$?
"$probe" report release-candidate --db "$out/probe.duckdb" -o "$out/report.html"
exit "$status"
