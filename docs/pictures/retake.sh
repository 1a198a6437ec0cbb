#!/usr/bin/env bash
# Retakes the pictures of the docs, as chrome://tracing (catapult's Trace
# Viewer, from ../shared/importers; run its setup first) draws the traces
# the examples write. Run from anywhere; the PNGs land next to this script.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# basic.png and basic-stats.txt: the README's first command's trace, as
# chrome://tracing draws it and as tracer stats sums it up.
(cd "$root" && go build -o "$work/basic" ./examples/basic)
mkdir "$work/basic.d"
(cd "$work/basic.d" && ../basic >/dev/null)
node "$here/screenshot.js" "$work/basic.d/trace.json" "$here/basic.png" 1200x560
(cd "$root" && go build -o "$work/tracer" ./cmd/tracer)
(cd "$work/basic.d" && ../tracer stats -top 6 trace.json) > "$here/basic-stats.txt"

# services-merged.png: two processes over HTTP (examples/services), their
# files merged; the arrows are tracehttp's traceparent links.
(cd "$root" && go build -o "$work/services" ./examples/services && go build -o "$work/tracer" ./cmd/tracer)
(cd "$work" && ./services >/dev/null && ./tracer merge -q -o services.json frontend.json backend.json)
node "$here/screenshot.js" "$work/services.json" "$here/services-merged.png" 1200x900

# services-lanes.png: the same run with WithLanes: the backend's request
# goroutines drawn on the lanes of their route, as many as were in flight.
mkdir "$work/lanes"
(cd "$work/lanes" && ../services -lanes >/dev/null && ../tracer merge -q -o services.json frontend.json backend.json)
node "$here/screenshot.js" "$work/lanes/services.json" "$here/services-lanes.png" 1200x900

# otel-nested.png: OpenTelemetry spans through traceotel (examples/otel, a
# module of its own): server spans nested on the handler's goroutine around
# its tracer spans, queries nested on their goroutines with flows from the
# request, a job ended by a worker as an async slice.
(cd "$root/examples/otel" && go build -o "$work/otel" .)
mkdir "$work/otel.d"
(cd "$work/otel.d" && ../otel >/dev/null)
node "$here/screenshot.js" "$work/otel.d/otel.json" "$here/otel-nested.png" 1200x1000

# capture.png: tracedebug's capture of a server under load (examples/capture),
# fetched over HTTP as tracer view would.
(cd "$root" && go build -o "$work/capture" ./examples/capture)
mkdir "$work/capture.d"
(cd "$work/capture.d" && ../capture >/dev/null)
node "$here/screenshot.js" "$work/capture.d/capture.json" "$here/capture.png" 1200x700
