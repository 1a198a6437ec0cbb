#!/usr/bin/env bash
# Runs every benchmark of this module in one `go test` process and prints
# the markdown report (also written to RESULTS.md). Arguments go to
# cmd/report, for example:
#
#   ./run.sh                 # -count 5 (about 10 minutes on 2 cores)
#   ./run.sh -quick          # -count 1, short runs: a smoke test (under 2 minutes)
#   ./run.sh -count 10
#   ./run.sh -throughput=false -tightloop=false
set -euo pipefail
cd "$(dirname "$0")"
# benchstat summarises the runs; install it if this machine lacks it.
if ! command -v benchstat >/dev/null 2>&1 && [ ! -x "$(go env GOPATH)/bin/benchstat" ]; then
	go install golang.org/x/perf/cmd/benchstat@latest
fi
# The tracer's own dependencies come in through the replace directive: when
# it gains one, this module's go.sum needs the new entries.
if ! go list -deps ./... >/dev/null 2>&1; then
	go mod tidy
fi
exec go run ./cmd/report "$@"
