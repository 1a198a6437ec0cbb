// Package tracecheck reads trace files the way the tests of the
// integration packages need: strictly, after the documented repair for a
// file that was not closed, and with the two real importers (Perfetto's
// trace_processor and catapult's Trace Viewer) when they are set up.
package tracecheck

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/gotracer/tracer/internal/tracefile"
	"github.com/stretchr/testify/require"
)

// Event is one trace event as a viewer reads it.
type Event struct {
	Name  string         `json:"name"`
	Cat   string         `json:"cat"`
	Ph    string         `json:"ph"`
	Ts    float64        `json:"ts"`
	Dur   float64        `json:"dur"`
	Pid   int            `json:"pid"`
	Tid   uint64         `json:"tid"`
	S     string         `json:"s"`
	ID    json.Number    `json:"id"`
	ID2   map[string]any `json:"id2"`
	Scope string         `json:"scope"`
	Bp    string         `json:"bp"`
	Args  map[string]any `json:"args"`
}

// Local returns an async event's id2.local, "" for other events.
func (e Event) Local() string {
	s, _ := e.ID2["local"].(string)
	return s
}

// objectHead starts a plain trace file closed by Close, which is the
// object {"displayTimeUnit":"ns","traceEvents":[...]}; until then the
// file is the array behind as many spaces.
const objectHead = `{"displayTimeUnit":"ns","traceEvents":`

// Read parses the trace at path with a strict JSON parser: see ReadBytes.
func Read(t testing.TB, path string) []Event {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return ReadBytes(t, data)
}

// ReadBytes parses a trace's bytes with a strict JSON parser: as they
// are if the file was closed, after the documented repair
// (tracefile.Terminate: strip the trailing comma, add "]") if it was not.
// An unterminated file must end on an event boundary.
func ReadBytes(t testing.TB, data []byte) []Event {
	t.Helper()
	if !bytes.HasPrefix(data, []byte(objectHead)) {
		data = bytes.TrimPrefix(data, []byte(strings.Repeat(" ", len(objectHead))))
		var torn bool
		data, torn = tracefile.Terminate(data)
		require.False(t, torn, "an unterminated trace ends on an event boundary: %q", data[max(0, len(data)-80):])
	}
	return Parse(t, data)
}

// Parse parses a closed trace's bytes as strict JSON, unrepaired, with
// encoding/json as the oracle (no unknown fields): a plain file in the
// object form that sets the display unit, anything else an array that
// starts with an event.
func Parse(t testing.TB, data []byte) []Event {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if bytes.HasPrefix(data, []byte(objectHead+"[\n{\"")) {
		var obj struct {
			DisplayTimeUnit string  `json:"displayTimeUnit"`
			TraceEvents     []Event `json:"traceEvents"`
		}
		require.NoError(t, dec.Decode(&obj), "a closed trace must be strict JSON")
		require.Equal(t, "ns", obj.DisplayTimeUnit)
		requireEnd(t, dec)
		return obj.TraceEvents
	}
	require.True(t, bytes.HasPrefix(data, []byte("[\n{\"")), "a trace starts with [ and an event, or the object head: %.60q", data)
	var evs []Event
	require.NoError(t, dec.Decode(&evs), "a closed trace must be strict JSON")
	requireEnd(t, dec)
	return evs
}

// requireEnd checks that nothing but white space follows the trace dec
// decoded: not an event written after the array's end, nor a stray "]" or
// "}" (which dec.More would take for the end of a value).
func requireEnd(t testing.TB, dec *json.Decoder) {
	t.Helper()
	tok, err := dec.Token()
	require.ErrorIs(t, err, io.EOF, "nothing may follow the trace, found %v", tok)
}

// Filter returns the events for which keep is true.
func Filter(evs []Event, keep func(Event) bool) []Event {
	var out []Event
	for _, e := range evs {
		if keep(e) {
			out = append(out, e)
		}
	}
	return out
}

// Phase returns the events of phase ph.
func Phase(evs []Event, ph string) []Event {
	return Filter(evs, func(e Event) bool { return e.Ph == ph })
}

// Named returns the events named name.
func Named(evs []Event, name string) []Event {
	return Filter(evs, func(e Event) bool { return e.Name == name })
}

// Nanos returns the nanoseconds a trace's microseconds us stand for: the
// file's resolution, at which times compare exactly (an X event's end,
// ts+dur in float64, may be a hair off the next event's ts).
func Nanos(us float64) int64 { return int64(math.Round(us * 1e3)) }

// Slice is a span on a goroutine's track, from an X event or a B/E pair.
type Slice struct {
	Name       string
	Tid        uint64
	Start, End float64
	Args       map[string]any
}

// Tracks checks what both viewers need of every goroutine's track (B and E
// events form a stack in file order with matching names; all slices nest
// without overlapping) and returns the slices of each track, sorted by
// start.
func Tracks(t testing.TB, evs []Event) map[uint64][]Slice {
	t.Helper()
	tracks := map[uint64][]Slice{}
	open := map[uint64][]Event{}
	for _, e := range evs {
		switch e.Ph {
		case "X":
			require.GreaterOrEqual(t, e.Dur, 0.0, "X %q on track %d lasts less than nothing", e.Name, e.Tid)
			tracks[e.Tid] = append(tracks[e.Tid], Slice{e.Name, e.Tid, e.Ts, e.Ts + e.Dur, e.Args})
		case "B":
			open[e.Tid] = append(open[e.Tid], e)
		case "E":
			st := open[e.Tid]
			require.NotEmpty(t, st, "E %q on track %d without a B before it", e.Name, e.Tid)
			b := st[len(st)-1]
			open[e.Tid] = st[:len(st)-1]
			require.Equal(t, b.Name, e.Name, "E must carry its B's name")
			require.GreaterOrEqual(t, e.Ts, b.Ts, "E %q on track %d before its B", e.Name, e.Tid)
			tracks[e.Tid] = append(tracks[e.Tid], Slice{e.Name, e.Tid, b.Ts, e.Ts, b.Args})
		}
	}
	for tid, ss := range tracks {
		sort.Slice(ss, func(i, j int) bool {
			if ss[i].Start != ss[j].Start {
				return ss[i].Start < ss[j].Start
			}
			return ss[i].End > ss[j].End
		})
		// ts+dur in float64 µs can be off by far less than the file's
		// resolution (1ns) from the next slice's ts: compare to that.
		const ns = 1e-3 / 2
		var stack []Slice
		for _, s := range ss {
			for len(stack) > 0 && stack[len(stack)-1].End <= s.Start+ns {
				stack = stack[:len(stack)-1]
			}
			if len(stack) > 0 {
				top := stack[len(stack)-1]
				require.LessOrEqual(t, s.End, top.End+ns, "track %d: %q [%v,%v] overlaps %q [%v,%v]",
					tid, s.Name, s.Start, s.End, top.Name, top.Start, top.End)
			}
			stack = append(stack, s)
		}
	}
	return tracks
}

// Enclosing returns the innermost slice of track tid open at ts, or false.
func Enclosing(tracks map[uint64][]Slice, tid uint64, ts float64) (Slice, bool) {
	var best Slice
	found := false
	for _, s := range tracks[tid] {
		if s.Start <= ts && ts <= s.End && (!found || s.Start >= best.Start) {
			best, found = s, true
		}
	}
	return best, found
}

// AsyncOp is one async operation: its b, its n and nested b/e children,
// and its e.
type AsyncOp struct {
	Begin, End Event
	Children   []Event
}

// Async checks that every async operation's events pair up (a b and then
// an e with the same category, name and id, children nested inside, each
// with a category, which catapult requires) and returns the top-level
// operations.
func Async(t testing.TB, evs []Event) []AsyncOp {
	t.Helper()
	type key struct{ cat, id string }
	open := map[key][]Event{}
	var ops []AsyncOp
	children := map[key][]Event{}
	for _, e := range evs {
		if e.Ph != "b" && e.Ph != "n" && e.Ph != "e" {
			continue
		}
		require.NotEmpty(t, e.Cat, "async event %q without a category", e.Name)
		require.NotEmpty(t, e.Local(), "async event %q without an id2.local", e.Name)
		k := key{e.Cat, e.Local()}
		switch e.Ph {
		case "b":
			if len(open[k]) > 0 {
				children[k] = append(children[k], e)
			}
			open[k] = append(open[k], e)
		case "n":
			require.NotEmpty(t, open[k], "n %q outside its operation", e.Name)
			children[k] = append(children[k], e)
		case "e":
			st := open[k]
			require.NotEmpty(t, st, "e %q without its b", e.Name)
			b := st[len(st)-1]
			require.Equal(t, b.Name, e.Name, "e must carry its b's name")
			require.GreaterOrEqual(t, e.Ts, b.Ts)
			open[k] = st[:len(st)-1]
			if len(open[k]) == 0 {
				ops = append(ops, AsyncOp{Begin: b, End: e, Children: children[k]})
				delete(children, k)
			} else {
				children[k] = append(children[k], e)
			}
		}
	}
	for k, st := range open {
		require.Empty(t, st, "operation %v never ended", k)
	}
	return ops
}

// importers returns the directory of perfetto-check and catapult-check, or
// "" if they are not there.
func importers() string {
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

// Report is what one importer made of one file.
type Report map[string]any

// Import loads the files with both real importers and fails the test on
// any load failure, import error or catapult warning. It returns
// Perfetto's and catapult's reports, one per file, for further checks. It
// skips the test when the importers are not set up.
func Import(t testing.TB, paths ...string) (perfetto, catapult []Report) {
	t.Helper()
	perfetto, catapult = Load(t, paths...)
	requireClean(t, paths, perfetto)
	requireClean(t, paths, catapult)
	return perfetto, catapult
}

// requireClean fails the test unless every report of reps, one per path,
// says its file loaded with no import error or warning.
func requireClean(t testing.TB, paths []string, reps []Report) {
	t.Helper()
	for i, r := range reps {
		require.Equal(t, true, r["ok"], "%s %s: %v", r["importer"], paths[i], r["error"])
		for _, field := range []string{"warnings", "importErrors"} {
			if v, ok := r[field]; ok {
				require.Empty(t, v, "%s %s: %s", r["importer"], paths[i], field)
			}
		}
	}
}

// HeavyEnv names the environment variable that asks for a heavy run:
// the heavy tests, and every file of a test loaded in both importers.
// .ci/run sets it on every run; the README's test command, the quick run,
// leaves it unset.
const HeavyEnv = "TRACER_HEAVY"

// Heavy reports whether HeavyEnv is set: a heavy run.
func Heavy() bool { return os.Getenv(HeavyEnv) != "" }

// ImportQuick is Import in a heavy run (Heavy). In the quick run it loads
// the files with Perfetto's importer alone, with the same checks, and
// returns a nil catapult: a run of catapult's importer starts Chromium,
// about 3 s of CPU whatever the file, where Perfetto's takes a fraction
// of a second. It suits the tests of the packages that write through the
// tracer's encoder, whose every kind of event the root package's tests
// load in both importers in the quick run too.
func ImportQuick(t testing.TB, paths ...string) (perfetto, catapult []Report) {
	t.Helper()
	if Heavy() {
		return Import(t, paths...)
	}
	perfetto = LoadPerfetto(t, paths...)
	requireClean(t, paths, perfetto)
	return perfetto, nil
}

// Load loads the files with both real importers and returns Perfetto's
// and catapult's reports, one per file, whatever they say: a file an
// importer refuses has "ok" false. The two run at the same time (each
// mostly waits for its trace processor or its browser). It skips the test
// when the importers are not set up.
func Load(t testing.TB, paths ...string) (perfetto, catapult []Report) {
	t.Helper()
	dir := importersOrSkip(t)
	var wg sync.WaitGroup
	var errs [2]error
	wg.Go(func() { perfetto, errs[0] = run(dir, "perfetto-check", paths) })
	wg.Go(func() { catapult, errs[1] = run(dir, "catapult-check", paths) })
	wg.Wait()
	require.NoError(t, errors.Join(errs[:]...))
	return perfetto, catapult
}

// LoadPerfetto is Load with Perfetto's importer alone, which takes a
// fraction of a second where catapult's starts Chromium.
func LoadPerfetto(t testing.TB, paths ...string) []Report {
	t.Helper()
	reps, err := run(importersOrSkip(t), "perfetto-check", paths)
	require.NoError(t, err)
	return reps
}

// importersOrSkip returns the importers' directory, or skips the test
// when they are not set up.
func importersOrSkip(t testing.TB) string {
	t.Helper()
	dir := importers()
	if dir == "" {
		t.Skip("the real importers are not set up: run /work/shared/importers/setup (or set TRACER_IMPORTERS to its directory)")
	}
	return dir
}

// run runs the importer command tool of dir on paths and returns its
// reports, one per path.
func run(dir, tool string, paths []string) ([]Report, error) {
	args := append([]string{"--brief"}, paths...)
	out, err := exec.Command(filepath.Join(dir, tool), args...).Output()
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == 1 {
		err = nil // a file failed to load: its report says why
	}
	if err != nil {
		return nil, fmt.Errorf("%s failed: %w: %s", tool, err, out)
	}
	var reps []Report
	if len(paths) == 1 {
		var r Report
		err = json.Unmarshal(out, &r)
		reps = []Report{r}
	} else {
		err = json.Unmarshal(out, &reps)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: its report: %w", tool, err)
	}
	return reps, nil
}

// Totals returns a report's "totals" object.
func (r Report) Totals() map[string]float64 {
	out := map[string]float64{}
	if m, ok := r["totals"].(map[string]any); ok {
		for k, v := range m {
			if f, ok := v.(float64); ok {
				out[k] = f
			}
		}
	}
	return out
}

// SlicesNamed returns the slices named name on every track, sorted by
// start: X events and B/E pairs alike, since a span that outlives a flush
// interval is written as B and E.
func SlicesNamed(tracks map[uint64][]Slice, name string) []Slice {
	var out []Slice
	for _, ss := range tracks {
		for _, s := range ss {
			if s.Name == name {
				out = append(out, s)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Start < out[j].Start })
	return out
}

// Query runs sql with Perfetto's trace_processor_shell over the trace at
// path and returns the rows, each column by name as trace_processor
// prints it (strings unquoted, NULL as "[NULL]"). It skips the test when
// the importers are not set up.
func Query(t testing.TB, path, sql string) []map[string]string {
	t.Helper()
	dir := importers()
	if dir == "" {
		t.Skip("the real importers are not set up: run /work/shared/importers/setup (or set TRACER_IMPORTERS to its directory)")
	}
	q := filepath.Join(t.TempDir(), "q.sql")
	require.NoError(t, os.WriteFile(q, []byte(sql), 0o644))
	cmd := exec.Command(filepath.Join(dir, "perfetto", "trace_processor_shell"), "-q", q, path)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "trace_processor_shell: %s", stderr.String())
	r := csv.NewReader(bytes.NewReader(out))
	r.FieldsPerRecord = -1
	recs, err := r.ReadAll()
	require.NoError(t, err, "trace_processor_shell printed %q", out)
	if len(recs) == 0 {
		return nil
	}
	rows := make([]map[string]string, 0, len(recs)-1)
	for _, rec := range recs[1:] {
		row := map[string]string{}
		for i, col := range recs[0] {
			if i < len(rec) {
				row[col] = rec[i]
			}
		}
		rows = append(rows, row)
	}
	return rows
}
