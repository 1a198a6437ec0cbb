#!/usr/bin/env bash
# make.sh regenerates cmd/tracer/testdata/tools: trace files written by real
# tools (the Go toolchain, Node.js, TypeScript, clang, CMake, webpack,
# headless Chromium) run on this machine, from the small projects in src/.
#
#   ./make.sh            the small files, committed here gzipped, and the
#                        large ones, written to the cache for benchmarks
#   ./make.sh small      only the committed files
#   ./make.sh large      only the cache's files
#   ./make.sh verdicts   only verdicts.json, from the committed files
#
# After the small files it rewrites verdicts.json: what Perfetto's
# trace_processor and chrome://tracing's importer make of each (verdicts.js,
# with the importers of $TRACER_IMPORTERS, default /work/shared/importers).
#
# It installs what it needs (Debian's clang, cmake and chromium as root;
# npm packages from the lock files in src/), at the versions below where it
# can, and says so where the machine has another. Environment:
#   WORK   scratch directory, emptied first (default ${TMPDIR:-/tmp}/tracer-tools)
#   TRACER_CORPUS_CACHE  where the large files go (default .cache here,
#          git-ignored); cmd/tracer/internal/corpus reads the same variable
# The projects' paths in the traces are under WORK; system headers, CMake's
# modules and the Go toolchain's own paths are not.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../../.." && pwd)
work=${WORK:-${TMPDIR:-/tmp}/tracer-tools}
cache=${TRACER_CORPUS_CACHE:-$here/.cache}
importers=${TRACER_IMPORTERS:-/work/shared/importers}
what=${1:-all}
case $what in all | small | large | verdicts) ;; *)
	echo "usage: $0 [all|small|large|verdicts]" >&2
	exit 2
	;;
esac

# The versions the committed files were made with.
want_go=go1.26.8
want_node=v20.20.2
want_clang=1:14.0-55.7~deb12u1
want_cmake=3.25.1-1
want_chromium=156.0.8078.108-1~deb12u1

say() { printf '== %s\n' "$*" >&2; }
warn() { printf 'make.sh: warning: %s\n' "$*" >&2; }

# apt_pin installs Debian package $1 at version $2 if missing, falling back
# to the candidate version (with a warning) when that one is gone.
apt_pin() {
	local pkg=$1 ver=$2 have
	have=$(dpkg-query -W -f='${Version}' "$pkg" 2>/dev/null || true)
	if [ -z "$have" ]; then
		[ "$(id -u)" = 0 ] || { echo "make.sh: $pkg is missing; run as root to install it" >&2; exit 1; }
		say "apt-get install $pkg=$ver"
		DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$pkg=$ver" >&2 ||
			{ apt-get update >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$pkg" >&2; }
		have=$(dpkg-query -W -f='${Version}' "$pkg")
	fi
	[ "$have" = "$ver" ] || warn "$pkg is $have, the committed files were made with $ver"
}

check_versions() {
	local v
	v=$(go env GOVERSION)
	[ "$v" = "$want_go" ] || warn "go is $v, the committed files were made with $want_go"
	v=$(node --version)
	[ "$v" = "$want_node" ] || warn "node is $v, the committed files were made with $want_node"
}

# events prints how many events a trace file holds (either form).
events() {
	node -e '
		const d = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
		console.log((Array.isArray(d) ? d : d.traceEvents).length);
	' "$1"
}

# keep gzips a made file into this directory (-n: no name or time in the
# header, so the same trace gives the same bytes).
keep() {
	local src=$1 name=$2
	gzip -9 -n -c "$src" >"$here/$name.gz"
	made+=("$here/$name.gz|$src")
}

# keep_large copies a made file into the cache, uncompressed.
keep_large() {
	local src=$1 name=$2
	mkdir -p "$cache"
	cp "$src" "$cache/$name"
	made+=("$cache/$name|$src")
}

chromium_flags=(--headless --no-sandbox --disable-gpu --disable-quic --no-first-run
	--disable-background-networking --disable-component-update --disable-sync)

# chromium_trace DURATION CATEGORIES OUT runs headless Chromium on the page
# with a startup trace of DURATION seconds (CATEGORIES empty: Chromium's
# default ones), and ends it and its helpers once OUT is written.
chromium_trace() {
	local dur=$1 cats=$2 out=$3 profile
	profile=$(mktemp -d "$work/chromium-profile.XXXX")
	local trace=--trace-startup
	[ -n "$cats" ] && trace=--trace-startup=$cats
	"$work/chromerun" -out "$out" -- chromium "${chromium_flags[@]}" --user-data-dir="$profile" \
		"$trace" --trace-startup-format=json --trace-startup-file="$out" \
		--trace-startup-duration="$dur" "file://$work/chromium/page.html" 2>"$out.log"
	rm -rf "$profile"
}

setup() {
	apt_pin clang "$want_clang"
	apt_pin cmake "$want_cmake"
	apt_pin chromium "$want_chromium"
	check_versions
	case $work in / | "$HOME" | "$root" | "$here") echo "make.sh: WORK=$work would be emptied; choose a scratch directory" >&2; exit 2 ;; esac
	rm -rf "$work"
	mkdir -p "$work/out"
	cp -r "$here/src/." "$work/"
	say "npm ci (src/ts, src/webpack)"
	(cd "$work/ts" && npm ci --no-audit --no-fund >&2)
	(cd "$work/webpack" && npm ci --no-audit --no-fund >&2)
	(cd "$here/chromerun" && go build -o "$work/chromerun" ./main.go)
}

small() {
	local out=$work/out

	say "Go: go build -debug-trace of this repository's cmd/tracer at HEAD, empty build cache"
	mkdir -p "$work/repo"
	git -C "$root" archive HEAD | tar -x -C "$work/repo"
	(cd "$work/repo" && GOCACHE="$work/gocache" \
		go build -debug-trace="$out/go-build.json" -o "$work/tracer-bin" ./cmd/tracer)
	keep "$out/go-build.json" go-build.json

	say "Node.js: --trace-events-enabled (default categories), an HTTP server and client"
	(cd "$work/node" && node --trace-events-enabled --trace-event-file-pattern="$out/node-server.json" server.js >&2)
	keep "$out/node-server.json" node-server.json

	say "Node.js: --trace-event-categories, worker threads"
	(cd "$work/node" && node --trace-event-categories=v8,node,node.async_hooks,node.perf,node.perf.usertiming,node.fs.sync,node.bootstrap,node.environment,node.threadpoolwork.async,node.threadpoolwork.sync,node.console \
		--trace-event-file-pattern="$out/node-workers.json" workers.js >&2)
	keep "$out/node-workers.json" node-workers.json

	say "TypeScript 6: tsc --generateTrace"
	(cd "$work/ts" && ./node_modules/.bin/tsc -p . --generateTrace "$out/tsc6" >&2)
	keep "$out/tsc6/trace.json" tsc6-trace.json

	say "TypeScript 7 (native): tsc --generateTrace"
	(cd "$work/ts" && node node_modules/typescript-7/bin/tsc -p . --outDir out7 --generateTrace "$out/tsc7" >&2)
	keep "$out/tsc7/trace.json" tsc7-trace.json

	say "clang: -ftime-trace, C++ and C"
	(cd "$work/cpp" && clang++ -std=c++17 -O2 -ftime-trace -c spans.cpp -o spans.o &&
		clang -O2 -ftime-trace -c ring.c -o ring.o)
	keep "$work/cpp/spans.json" clang-spans-cpp.json
	keep "$work/cpp/ring.json" clang-ring-c.json

	say "CMake: --profiling-format=google-trace, configure"
	cmake --profiling-format=google-trace --profiling-output="$out/cmake.json" \
		-S "$work/cmake" -B "$work/cmake-build" >&2
	keep "$out/cmake.json" cmake-configure.json

	say "webpack: ProfilingPlugin, the small app"
	(cd "$work/webpack" && WEBPACK_PROFILE="$out/webpack-small.json" WEBPACK_OUT=dist \
		./node_modules/.bin/webpack --config webpack.config.js >&2)
	keep "$out/webpack-small.json" webpack-small.json

	say "Chromium: --trace-startup, 1 s, a few categories"
	chromium_trace 1 loading,blink.user_timing,devtools.timeline,v8,blink,renderer.scheduler,__metadata \
		"$out/chromium-startup-small.json"
	keep "$out/chromium-startup-small.json" chromium-startup-small.json
}

large() {
	local out=$work/out

	say "webpack: ProfilingPlugin, the app and all of lodash-es"
	(cd "$work/webpack" && WEBPACK_ENTRY=./src/large.js WEBPACK_PROFILE="$out/webpack-large.json" \
		WEBPACK_OUT=dist-large ./node_modules/.bin/webpack --config webpack.config.js >&2)
	keep_large "$out/webpack-large.json" webpack-large.json

	say "Chromium: --trace-startup, 3 s, default categories"
	chromium_trace 3 "" "$out/chromium-startup.json"
	keep_large "$out/chromium-startup.json" chromium-startup.json
}

# verdicts rewrites verdicts.json from the committed files.
verdicts() {
	if [ ! -x "$importers/perfetto-check" ] || [ ! -x "$importers/catapult-check" ]; then
		warn "no importers in $importers (run its setup): verdicts.json not rewritten"
		return
	fi
	say "verdicts.json: both importers on the committed files"
	(cd "$here" && TRACER_IMPORTERS=$importers node verdicts.js ./*.json.gz >verdicts.json.new)
	mv "$here/verdicts.json.new" "$here/verdicts.json"
}

made=()
if [ "$what" = verdicts ]; then
	verdicts
	exit
fi
setup
if [ "$what" != large ]; then
	small
	verdicts
fi
[ "$what" = small ] || large

printf '%-34s %10s %10s %8s\n' file bytes stored events
for m in "${made[@]}"; do
	file=${m%%|*} src=${m#*|}
	printf '%-34s %10d %10d %8d\n' "${file#"$here/"}" "$(stat -c %s "$src")" "$(stat -c %s "$file")" "$(events "$src")"
done
