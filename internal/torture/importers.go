//go:build linux

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gotracer/tracer/internal/tracefile"
)

// Loading the files in both real importers (/work/shared/importers:
// Perfetto's trace_processor and catapult's Trace Viewer, which
// chrome://tracing runs). They are slow, catapult most (a Chromium starts
// for each call), so a run loads them only if its seed draws it
// (drawImporters: about one seed in five, from the seed alone), and then
// at most importFiles files: each tracer's main file (its path, its
// stream, its last flight recording) and one rotated file, the largest
// first, within a size each importer loads in seconds.

const (
	importFiles     = 3
	perfettoMaxSize = 256 << 20 // uncompressed bytes, estimated
	catapultMaxSize = 24 << 20
)

// importerDir returns the directory of perfetto-check and catapult-check,
// or "" if they are not set up.
func importerDir() string {
	for _, dir := range []string{os.Getenv("TRACER_IMPORTERS"), "/work/shared/importers"} {
		if dir == "" {
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, "node_modules")); err == nil {
			return dir
		}
	}
	return ""
}

// importers loads a sample of files in both importers and fails the run
// on a file either refuses, an import error or warning, or an overflow
// track (Perfetto's second thread_execution track for one thread, where
// it moves slices that overlap).
func (r *run) importers(files []traceFile) {
	dir := importerDir()
	if dir == "" {
		r.note("importers: not set up (run /work/shared/importers/setup): not loaded")
		return
	}
	type cand struct {
		traceFile
		size int64
	}
	var main, rotated []cand
	for _, f := range files {
		fi, err := os.Stat(f.path)
		if err != nil || fi.Size() == 0 {
			continue
		}
		size := fi.Size()
		if strings.HasSuffix(f.path, ".gz") {
			size *= 10 // about what a trace compresses by
		}
		c := cand{f, size}
		switch f.kind {
		case "trace", "stream", "final":
			main = append(main, c)
		case "rotated":
			rotated = append(rotated, c)
		}
	}
	sort.Slice(main, func(i, j int) bool { return main[i].size > main[j].size })
	sort.Slice(rotated, func(i, j int) bool { return rotated[i].size > rotated[j].size })
	var perfetto, catapult []string
	var skipped []string
	for _, c := range append(main, rotated[:min(1, len(rotated))]...) {
		if len(perfetto) >= importFiles {
			break
		}
		rel, _ := filepath.Rel(r.dir, c.path)
		if c.size > perfettoMaxSize {
			skipped = append(skipped, rel+" (both)")
			continue
		}
		perfetto = append(perfetto, c.path)
		if c.size > catapultMaxSize {
			skipped = append(skipped, rel+" (catapult)")
			continue
		}
		catapult = append(catapult, c.path)
	}
	if len(skipped) > 0 {
		r.note("importers: too large to load in seconds, not loaded: %s", strings.Join(skipped, ", "))
	}
	r.loadIn(filepath.Join(dir, "perfetto-check"), perfetto, nil)
	tmp, err := os.MkdirTemp("", "torture-catapult-")
	if err != nil {
		r.fail("importers", "%v", err)
		return
	}
	defer os.RemoveAll(tmp)
	loaded := make([]string, len(catapult))
	for i, path := range catapult {
		loaded[i] = catapultCopy(path, filepath.Join(tmp, fmt.Sprint(i)))
	}
	r.loadIn(filepath.Join(dir, "catapult-check"), loaded, catapult)
}

// catapultCopy returns the file catapult loads for path: path itself, or,
// for a file in the bare array form (a plain file a kill left
// unterminated, a stream), a copy at cp in the object form a clean Close
// writes, {"displayTimeUnit":"ns","traceEvents":[...]}. catapult reads
// the bare array at microsecond precision and nests spans less than a
// microsecond apart inside one another (docs/guarantees.md), which also
// takes the slices from under their flow arrows; the copy is read at the
// precision the events have. (Gzip files are loaded as they are: a closed
// one is the object form once its members are joined.)
func catapultCopy(path, cp string) string {
	if strings.HasSuffix(path, ".gz") {
		return path
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return path
	}
	if t := bytes.TrimLeft(data, " "); bytes.HasPrefix(t, []byte("[")) && bytes.HasSuffix(t, []byte("\n]\n}\n")) {
		data = t[:len(t)-len("}\n")] // cut between its two closing writes: see fileRules.halfClosed
	}
	closed, _ := tracefile.Terminate(data)
	if !bytes.HasPrefix(bytes.TrimLeft(closed, " \n"), []byte("[")) {
		return path // the object form: a closed plain file, a recording
	}
	obj := append([]byte(`{"displayTimeUnit":"ns","traceEvents":`), bytes.TrimSpace(closed)...)
	if os.WriteFile(cp, append(obj, "}\n"...), 0o644) != nil {
		return path
	}
	return cp
}

// loadIn loads paths with one importer's check command; shown, if not nil,
// are the files they stand for (see catapultCopy), named in its reports.
func (r *run) loadIn(tool string, paths, shown []string) {
	if len(paths) == 0 {
		return
	}
	if shown == nil {
		shown = paths
	}
	name := filepath.Base(tool)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, tool, append([]string{"--brief"}, paths...)...).Output()
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == 1 {
		err = nil // a file failed to load: its report says why
	}
	if err != nil {
		r.fail("importers", "%s failed: %v: %.300s", name, err, out)
		return
	}
	var reps []map[string]any
	if len(paths) == 1 {
		var rep map[string]any
		err = json.Unmarshal(out, &rep)
		reps = append(reps, rep)
	} else {
		err = json.Unmarshal(out, &reps)
	}
	if err != nil || len(reps) != len(paths) {
		r.fail("importers", "%s printed what does not parse (%v): %.300s", name, err, out)
		return
	}
	for i, rep := range reps {
		rel, _ := filepath.Rel(r.dir, shown[i])
		if deepest(r.cfg) >= perfettoMaxDepth {
			// Perfetto draws at most 512 levels of nesting and says so:
			// the file holds what the program did.
			if dropped := dropImportError(rep, "slice_max_depth_exceeded"); dropped {
				r.note("importers: %s %s: spans nested deeper than Perfetto's %d levels", name, rel, perfettoMaxDepth)
			}
		}
		if paths[i] != shown[i] {
			// A killed process's file: the async operations open at the
			// kill have their b and never their e.
			dropUnmatchedAsync(rep, "BEGIN")
		}
		if r.writesFail(rel) {
			// A failed write may lose an async b and not its e, or a
			// flow's start and not its end (see fileRules.asyncPair): the
			// viewers say so.
			dropUnmatchedAsync(rep, "BEGIN")
			dropUnmatchedAsync(rep, "END")
			for _, w := range cutFlowWarnings {
				dropImportError(rep, w)
				dropWarning(rep, w)
			}
		}
		if rotatedSet(shown[i]) || r.cycledFile(rel) {
			// A file of a rotated set, or of a default tracer's Start/Stop
			// cycles, holds part of the timeline: a flow whose start and
			// end are in two files is an arrow neither viewer can draw,
			// and both say so (docs/internals.md, Rotation;
			// TestFilesLoadInBothViewers allows the same); so does
			// catapult of a flow that starts in a span the Stop left open
			// (seed 8954785360076499900).
			for _, w := range cutFlowWarnings {
				dropImportError(rep, w)
				dropWarning(rep, w)
			}
		}
		for _, p := range importProblems(rep) {
			r.fail("importers", "%s %s: %s", name, rel, p)
		}
	}
	r.note("importers: %s loaded %d files", name, len(paths))
}

// perfettoMaxDepth is the deepest nesting Perfetto draws on a track.
const perfettoMaxDepth = 512

// deepest returns how deep the workload of c nests spans on one track, at
// most.
func deepest(c *Config) int {
	d := 0
	for _, t := range c.Tracers {
		for _, s := range t.Shapes {
			d = max(d, s.Depth+2) // and a worker's span, and its job's
		}
	}
	return d
}

// cutFlowWarnings are what the importers say of a flow cut by a file's
// edge.
var cutFlowWarnings = []string{"flow_slice_start_error", "flow_slice_ordering_error", "flow_slice_end_error",
	"flow_no_enclosing_slice", "flow_end_without_start", "flow_step_without_start"}

// rotatedSet reports whether path is a file of a rotated set: a rotated
// file (name.NNNNNN.json), or the current file beside some.
func rotatedSet(path string) bool {
	name := filepath.Base(path)
	if rotatedName.MatchString(name) {
		return true
	}
	base, _, _ := strings.Cut(name, ".")
	others, _ := filepath.Glob(filepath.Join(filepath.Dir(path), base+".[0-9][0-9][0-9][0-9][0-9][0-9].*"))
	return len(others) > 0
}

// rotatedName matches the name of a rotated file.
var rotatedName = regexp.MustCompile(`\.\d{6}\.json(\.gz)?$`)

// writesFail reports whether the tracer of the file at rel (t0/...)
// meets failed writes: a disk that fills, a writer that fails or writes
// short, a pipe whose reader dies.
func (r *run) writesFail(rel string) bool {
	m := tracerDirName.FindStringSubmatch(filepath.ToSlash(rel))
	if m == nil {
		return false
	}
	i, err := strconv.Atoi(m[1])
	if err != nil || i >= len(r.cfg.Tracers) {
		return false
	}
	t := r.cfg.Tracers[i]
	return i == 0 && r.cfg.Tmpfs || t.Fault == faultFail || t.Fault == faultShort || t.FifoDiesAt > 0
}

// cycledFile reports whether rel is a trace file (not a tee's) of a
// default tracer that Start/Stop cycles split into files.
func (r *run) cycledFile(rel string) bool {
	rel = filepath.ToSlash(rel)
	m := tracerDirName.FindStringSubmatch(rel)
	if m == nil || strings.Contains(rel, "tees-") {
		return false
	}
	i, err := strconv.Atoi(m[1])
	return err == nil && i < len(r.cfg.Tracers) && r.cfg.Tracers[i].Cycles > 0
}

// tracerDirName finds the tracer of a file from its path in the run's
// directory: t0/trace.json, fs/t0/trace.json on the tmpfs,
// tees-t1/tee-2.json.
var tracerDirName = regexp.MustCompile(`(?:^|/)(?:tees-)?t(\d+)(?:/|\.|$)`)

// dropUnmatchedAsync removes catapult's warnings of async events of the
// kind ("BEGIN" or "END") whose other half is not in the file from rep.
func dropUnmatchedAsync(rep map[string]any, kind string) {
	ws, _ := rep["warnings"].([]any)
	kept := ws[:0]
	for _, w := range ws {
		m, _ := w.(map[string]any)
		msg, _ := m["message"].(string)
		if !(m["type"] == "async_slice_parse_error" && strings.Contains(msg, kind+" event") && strings.HasSuffix(msg, "was unmatched.")) {
			kept = append(kept, w)
		}
	}
	rep["warnings"] = kept
}

// dropWarning removes catapult's warnings of type typ from rep.
func dropWarning(rep map[string]any, typ string) {
	ws, _ := rep["warnings"].([]any)
	kept := ws[:0]
	for _, w := range ws {
		if m, _ := w.(map[string]any); m["type"] != typ {
			kept = append(kept, w)
		}
	}
	rep["warnings"] = kept
}

// dropImportError removes the import error named name from rep, and
// reports whether it was there.
func dropImportError(rep map[string]any, name string) bool {
	errs, _ := rep["importErrors"].([]any)
	kept := errs[:0]
	for _, e := range errs {
		if m, _ := e.(map[string]any); m["name"] != name {
			kept = append(kept, e)
		}
	}
	rep["importErrors"] = kept
	return len(kept) < len(errs)
}

// importProblems returns what is wrong in one importer's report of a file.
func importProblems(rep map[string]any) []string {
	var out []string
	if rep["ok"] != true {
		out = append(out, fmt.Sprintf("refused the file: %v", rep["error"]))
	}
	for _, field := range []string{"importErrors", "warnings"} {
		if v, ok := rep[field].([]any); ok && len(v) > 0 {
			b, _ := json.Marshal(v[:min(3, len(v))])
			out = append(out, fmt.Sprintf("%d %s: %s", len(v), field, b))
		}
	}
	// Perfetto moves slices that overlap on a thread to an overflow
	// track: a second thread_execution track for one tid.
	tracks := map[string]int{}
	if ts, ok := rep["slice_tracks"].([]any); ok {
		for _, t := range ts {
			m, _ := t.(map[string]any)
			if m["track_type"] == "thread_execution" {
				tracks[fmt.Sprintf("pid %v tid %v", m["pid"], m["tid"])]++
			}
		}
	}
	for k, n := range tracks {
		if n > 1 {
			out = append(out, fmt.Sprintf("%s has %d thread_execution tracks: overlapping slices were moved to an overflow track", k, n))
		}
	}
	sort.Strings(out)
	return out
}
