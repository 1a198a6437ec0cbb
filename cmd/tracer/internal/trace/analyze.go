// Package trace keeps the per-track state the tracer command's
// subcommands share, over the events internal/tracefile reads: span
// nesting, self time and busy time, and the problems that need the
// events' meaning.
package trace

import (
	"bytes"
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/gotracer/tracer/internal/tracefile"
)

// The kinds of problems that need the events' meaning.
const (
	KindPhase    tracefile.Kind = "phase"    // no phase, or one the viewers do not know
	KindIDs      tracefile.Kind = "ids"      // a pid or tid the viewers change
	KindTS       tracefile.Kind = "ts"       // a missing or negative ts or dur
	KindNesting  tracefile.Kind = "nesting"  // an E without its B, or out of order
	KindOverlap  tracefile.Kind = "overlap"  // X slices that overlap without nesting
	KindAsync    tracefile.Kind = "async"    // an async e without its b, or without cat
	KindFlow     tracefile.Kind = "flow"     // a flow event outside every slice
	KindCounter  tracefile.Kind = "counter"  // a counter Perfetto cannot read
	KindDepth    tracefile.Kind = "depth"    // slices nested deeper than Perfetto keeps
	KindPid      tracefile.Kind = "pid"      // an event without pid: chrome://tracing refuses the file
	KindArgs     tracefile.Kind = "args"     // an E repeating its B's args
	KindMetadata tracefile.Kind = "metadata" // metadata a viewer does not know
)

// catapultArgsDepth is the deepest nesting of objects in args that
// catapult is taken to read (6,000 levels were read, 8,000 failed).
const catapultArgsDepth = 7000

// knownPhases are the phases of the Trace Event Format.
var knownPhases = func() (t [256]bool) {
	for _, c := range "BEXiICbneSTpFstfPNODMVvRc()" {
		t[c] = true
	}
	return t
}()

// An Analyzer follows the events of a trace, track by track, reporting
// what a viewer would trip on and keeping the numbers stats prints. Its
// memory is per track, per span name, per open span and per open async
// operation, never per event (see tracks.go for the one bound).
type Analyzer struct {
	// OnProblem is called for each problem found.
	OnProblem func(tracefile.Problem)
	// Stats makes the Analyzer keep a Sketch of each span name's
	// durations and the numbers of each counter series, for stats.
	Stats bool
	// Exact are the tracks whose slices are replayed as Perfetto does,
	// by FinishExact: another Analyzer's Deep (see exact.go).
	Exact    TrackSet
	ExactAll bool // every track (for tests)
	// ReplayReports makes the replay of the Exact tracks report the B
	// events Perfetto cuts (misplaced_end_event), for check.
	ReplayReports bool
	// Keep makes the Analyzer keep the slice events of its tracks until
	// it is known whether they are replayed, so that ReplayKept can
	// replay those found Tangled without reading the file again (see
	// keep.go).
	Keep bool

	Events     int64
	MinTS      int64 // earliest ts, or start of a slice
	MaxTS      int64 // latest ts, or end of a slice
	HasTS      bool
	Names      []*NameStats
	Counters   []*CounterStats
	Processes  []*Process
	nameIdx    map[string]int32
	tracks     map[trackKey]*track
	trackList  []*track
	strIDs     map[string]int64
	async      map[string][]OpenAsync // open async slices, by category, scope and id: a stack each
	asyncKey   []byte
	counterIdx map[string]int32
	counterKey []byte
	procIdx    map[int64]*Process
	decoded    []byte
	foldIdx    []int32
	stacked    int // the slices of every track's tree
	foldChain  []bool
	sets       []depthSet // see depth.go
	freeSets   []int32
	below      below            // see depth.go
	shared     [256]int32       // sets give offers to entries
	flows      map[string]int32 // flow ids (category, name, id): their number
	flowEvs    []flowEvent      // see finishFlows
	flowKey    []byte
	noPid      bool
	unordered  bool  // a slice ended before one that came before it on its track
	sawX       bool  // an X came: Perfetto's sorter puts an E before the B events of its ts (see end)
	sortMax    int64 // the latest ts Perfetto's sorter took in order
	// SortedFrom is the ts from which Perfetto's sorter sorts the events
	// of one ts (see end), if Sorted: the least ts it found out of order.
	SortedFrom int64
	Sorted     bool
	grouped    bool             // span names are grouped: see names.go
	groupKey   []byte           // scratch
	example    string           // a name that was grouped
	exact      map[int64]string // by seq, the names of open B events, once grouped
	others     int64            // spans past maxNames groups
	lastKey    trackKey
	lastTrack  *track
	steps      int64 // work on the trees beyond a step per slice: see TestDeepNestingLinear
	deep       bool  // a track went deep: see WentDeep
	line       int32 // of the event being added
	kept       int   // slice events kept: see keep.go
	keptTracks int   // tracks kept
	keepOff    bool  // no track is kept from here on: past a bound, or at the end

	cataOpen    map[string]*catapultThread // by pid and tid, what catapult holds open
	keyBuf      []byte                     // scratch
	endCatapult string                     // what catapult warns of the E being followed
	endWhy      string
	asyncs      []asyncEvent // see finishAsyncs
}

// NameStats are the numbers of the slices of one name.
type NameStats struct {
	Name             string
	Count            int64
	Total, Self, Max int64  // nanoseconds
	Durations        Sketch // with Analyzer.Stats
	// MaxDepth is the deepest depth of its slices (0: a top-level one),
	// as Perfetto's slice table has it, with Analyzer.Stats, once Finish
	// was called.
	MaxDepth int32
}

// CounterStats are the numbers of one series of a counter.
type CounterStats struct {
	Pid           string
	Name, Key     string
	N             int64
	Min, Max, Sum float64
}

// A Process is what the metadata says about a pid.
type Process struct {
	Pid       tracefile.Num
	Name      string
	Anchor    int64 // ts0_unix_ns: the wall-clock time of ts 0
	HasAnchor bool
	Dropped   float64 // the last value of the tracer.dropped counter
}

// A TrackStats are the numbers of one track.
type TrackStats struct {
	Pid, Tid string
	Process  string // the process's name
	Name     string // the thread's name
	Slices   int64
	Busy     int64
}

type trackKey struct{ pid, tid int64 }

// NewAnalyzer returns an empty Analyzer.
func NewAnalyzer() *Analyzer {
	return &Analyzer{
		nameIdx:    map[string]int32{},
		tracks:     map[trackKey]*track{},
		strIDs:     map[string]int64{},
		async:      map[string][]OpenAsync{},
		counterIdx: map[string]int32{},
		procIdx:    map[int64]*Process{},
		flows:      map[string]int32{},
		exact:      map[int64]string{},
		cataOpen:   map[string]*catapultThread{},
	}
}

func (a *Analyzer) problem(line int, k tracefile.Kind, format string, args ...any) {
	a.problemV(line, k, "", "", format, args...)
}

// problemV reports a problem with what each viewer reports of it (see
// tracefile.Problem). A problem of an E's nesting takes what catapult
// says of that E (see catapultEnd), which is then said.
func (a *Analyzer) problemV(line int, k tracefile.Kind, perfetto, catapult string, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if k == KindNesting && catapult == "" && a.endCatapult != "" {
		catapult = a.endCatapult
		if !strings.Contains(msg, "chrome://tracing") {
			msg += "; " + a.endWhy
		}
		a.endCatapult = ""
	}
	if a.OnProblem != nil {
		a.OnProblem(tracefile.Problem{Line: line, Kind: k, Msg: msg, Perfetto: perfetto, Catapult: catapult})
	}
}

// numKey maps a pid or tid to an int64: numbers as they are, strings to
// ids above the uint32 range, so they cannot collide.
func (a *Analyzer) numKey(n tracefile.Num) int64 {
	switch n.Kind {
	case tracefile.NumInt:
		return n.Int
	case tracefile.NumString:
		id, ok := a.strIDs[string(n.Str)]
		if !ok {
			id = 1<<40 + int64(len(a.strIDs))
			a.strIDs[string(n.Str)] = id
		}
		return id
	}
	return -1 << 62
}

// track returns the state of the event's thread.
func (a *Analyzer) track(e *tracefile.Event) *track {
	k := trackKey{a.numKey(e.Pid), a.numKey(e.Tid)}
	if a.lastTrack != nil && k == a.lastKey {
		return a.lastTrack
	}
	t := a.tracks[k]
	if t == nil {
		t = &track{pid: clone(e.Pid), tid: clone(e.Tid), exact: a.ExactAll || a.Exact[k]}
		a.newTrack(t)
		a.tracks[k] = t
		a.trackList = append(a.trackList, t)
	}
	a.lastKey, a.lastTrack = k, t
	return t
}

func clone(n tracefile.Num) tracefile.Num {
	n.Raw = append([]byte(nil), n.Raw...)
	n.Str = append([]byte(nil), n.Str...)
	return n
}

func (a *Analyzer) addSelf(t *track, name int32, d int64) { a.names(t, name).Self += d }
func (a *Analyzer) subSelf(t *track, name int32, d int64) { a.names(t, name).Self -= d }

func (a *Analyzer) overlap(t *track, line int, name int32, s, e int64, p *slice) {
	t.overlaps++
	a.problemV(line, KindOverlap, "slice_spill_overlapping_complete_event", "", "slice %q [%s, %s] overlaps %q [%s, %s] (line %d) on pid %s tid %s without nesting: Perfetto moves the later of them to an extra track",
		a.Names[name].Name, us(s), us(e), a.Names[p.name].Name, us(p.start), us(p.end), p.line(), t.pid.Raw, t.tid.Raw)
}

// us formats nanoseconds as the microseconds of a ts.
func us(ns int64) string { return string(tracefile.AppendMicros(nil, ns)) }

func (a *Analyzer) seeTS(ts int64) {
	if !a.HasTS {
		a.MinTS, a.MaxTS, a.HasTS = ts, ts, true
		return
	}
	a.MinTS = min(a.MinTS, ts)
	a.MaxTS = max(a.MaxTS, ts)
}

// Add follows one event.
func (a *Analyzer) Add(e *tracefile.Event) {
	a.Events++
	a.line = int32(e.Line)
	ph := e.Phase()
	a.sorter(e, ph)
	if ph == 0 {
		if e.Ph == nil {
			a.problem(e.Line, KindPhase, "an event without ph (a string): the viewers skip it")
		} else {
			a.problem(e.Line, KindPhase, "unknown phase %q", e.Ph)
		}
		return
	}
	if !knownPhases[ph] {
		a.problem(e.Line, KindPhase, "unknown phase %q: the viewers skip the event", e.Ph)
		return
	}
	if e.ArgsDepth > catapultArgsDepth {
		a.problemV(e.Line, KindDepth, "", tracefile.Refuses, "args holding objects nested %d levels deep: chrome://tracing refuses the file past about 7,000 (Maximum call stack size exceeded); Perfetto reads it", e.ArgsDepth)
	}
	a.checkIDs(e, "pid", e.Pid)
	a.checkIDs(e, "tid", e.Tid)
	if e.Pid.Kind == tracefile.NumNone && !a.noPid && !(ph == 'i' || ph == 'I') {
		// chrome://tracing puts every event but a global instant in a
		// process.
		a.noPid = true
		a.problemV(e.Line, KindPid, "", tracefile.Refuses, "%s %c event without pid: chrome://tracing refuses the whole file (\"pid must be provided\"); this is the first", article(ph), ph)
	}
	if ph == 'M' {
		a.metadata(e)
		return
	}
	if !e.HasTS {
		a.problem(e.Line, KindTS, "%s %c event without a numeric ts (a number, or a string holding one): Perfetto drops it", article(ph), ph)
		return
	}
	if e.TS == math.MaxInt64 || ph == 'X' && e.HasDur && e.Dur > 0 && e.TS > math.MaxInt64-e.Dur {
		a.problemV(e.Line, KindTS, "trace_sorter_negative_timestamp_dropped", "", "%s %c event at a ts past the latest time Perfetto holds (2^63 ns, 292 years of microseconds): Perfetto drops it (trace_sorter_negative_timestamp_dropped: it overflows to a negative ts) or puts it at ts 0", article(ph), ph)
		return
	}
	if e.TS < 0 {
		a.problemV(e.Line, KindTS, "trace_sorter_negative_timestamp_dropped", "", "%s %c event at a negative ts: Perfetto drops it (trace_sorter_negative_timestamp_dropped)", article(ph), ph)
		return
	}
	a.seeTS(e.TS)
	switch ph {
	case 'X':
		if !e.HasDur {
			a.problemV(e.Line, KindTS, "json_parser_failure", "", "an X event without a numeric dur: Perfetto drops it (json_parser_failure)")
			return
		}
		if e.Dur < 0 {
			a.problemV(e.Line, KindTS, "slice_negative_duration", "", "an X event with a negative dur: Perfetto drops it (slice_negative_duration)")
			return
		}
		a.seeTS(e.TS + e.Dur)
		t, name := a.track(e), a.name(e.Name)
		if a.record(t, 'X', e.TS, e.Dur, name, false) {
			return
		}
		a.slice(t, e.TS, e.TS+e.Dur, name, e.Line, false, a.Events)
	case 'B':
		a.catapultBegin(e)
		t := a.track(e)
		if a.record(t, 'B', e.TS, 0, a.name(e.Name), false) {
			return
		}
		if len(t.cuts) > 0 && slices.Contains(t.cuts, e.TS) {
			t.tangled = true
		}
		if len(t.open) == 0 {
			t.openSorted = true
		} else if e.TS < t.open[len(t.open)-1].ts {
			t.openSorted = false
		}
		t.open = append(t.open, openSpan{ts: e.TS, name: a.name(e.Name), line: int32(e.Line), seq: a.Events})
		if len(t.open) > maxNesting && !t.deep {
			a.wentDeep(t) // the B past the deepest level Perfetto keeps, whatever ends it
		}
		if a.grouped && hasDigit(e.Name.Raw) {
			a.exact[a.Events] = e.Name.String() // for the E that repair -close-open writes
		}
	case 'E':
		a.endCatapult, a.endWhy = a.catapultEnd(e)
		a.end(e)
		if a.endCatapult != "" {
			a.problemV(e.Line, KindNesting, "", a.endCatapult, "an E event on pid %s tid %s: %s; Perfetto matches it", e.Pid.Raw, e.Tid.Raw, a.endWhy)
			a.endCatapult = ""
		}
	case 'i', 'I', 'R':
		// Perfetto makes an instant of a thread (the default scope) a
		// slice of no duration on its track.
		if !e.S.Set || string(e.S.Raw) == "t" {
			t, name := a.track(e), a.name(e.Name)
			if a.record(t, 'X', e.TS, 0, name, false) {
				return
			}
			a.slice(t, e.TS, e.TS, name, e.Line, false, a.Events)
		}
	case 'b', 'n', 'e':
		a.asyncEvent(e, ph)
	case 's', 't', 'f':
		a.flow(e, ph)
	case 'S', 'T', 'p', 'F':
		if e.ID == nil {
			a.problemV(e.Line, KindAsync, "", "async_slice_parse_error", "an async %c event without id: chrome://tracing drops it (\"Async events (ph: S, T, p, or F) require an id parameter\")", ph)
		}
		if ph == 'T' {
			a.problemV(e.Line, KindPhase, "json_parser_failure", "", "a legacy async step (T): Perfetto fails on it (json_parser_failure)")
		}
	case 'C':
		a.counter(e)
	}
}

// sorter follows what Perfetto's sorter (trace_sorter.h) makes of the
// event's ts: in order when it is later than every ts before it, or as
// late, until an X came; out of order else. At the end, the sorter
// sorts the events from the least ts it found out of order on, each ts
// by kind (an E first, then X events, the longer first, then the
// others) once an X came, else in file order. A metadata event without
// ts counts as one at 0.
func (a *Analyzer) sorter(e *tracefile.Event, ph byte) {
	ts := e.TS
	switch {
	case ph == 'X' && e.HasTS && e.TS >= 0:
		if !a.sawX {
			a.firstX()
		}
		a.sawX = true
	case !e.HasTS && ph == 'M':
		ts = 0
	case !e.HasTS || e.TS < 0:
		return
	}
	if ts > a.sortMax || ts == a.sortMax && !a.sawX {
		a.sortMax = ts
	} else if !a.Sorted || ts < a.SortedFrom {
		a.Sorted, a.SortedFrom = true, ts
	}
}

// SortsTiesAt reports whether Perfetto's sorter sorts the events of ts
// by kind (see sorter), once every event was added.
func (a *Analyzer) SortsTiesAt(ts int64) bool {
	return a.sawX && a.Sorted && ts >= a.SortedFrom
}

// article returns the article of a phase's letter: "an X", "a B".
func article(ph byte) string {
	if ph == 'E' || ph == 'F' || ph == 'I' || ph == 'M' || ph == 'N' || ph == 'O' || ph == 'S' || ph == 'X' {
		return "an"
	}
	return "a"
}

// slice records a completed slice.
func (a *Analyzer) slice(t *track, s, e int64, name int32, line int, be bool, seq int64) {
	e = a.add(t, s, e, name, line, be, seq)
	a.count(t, name, e-s)
}

// count counts a slice of t of d nanoseconds named name.
func (a *Analyzer) count(t *track, name int32, d int64) {
	n := a.names(t, name)
	n.Count++
	n.Total += d
	n.Max = max(n.Max, d)
	if a.Stats {
		n.Durations.Add(d)
	}
}

func (a *Analyzer) checkIDs(e *tracefile.Event, what string, n tracefile.Num) {
	switch {
	case n.Kind == tracefile.NumOther:
		a.problem(e.Line, KindIDs, "%s %s is neither a number nor a string", what, n.Raw)
	case n.Bounds:
		a.problem(e.Line, KindIDs, "%s %s is outside 0..4294967295: Perfetto shows it as 0", what, n.Raw)
	case n.Frac:
		a.problem(e.Line, KindIDs, "%s %s is not an integer: the viewers cut the fraction", what, n.Raw)
	}
}

func (a *Analyzer) end(e *tracefile.Event) {
	t := a.track(e)
	if t.exact || t.keep {
		named := e.Name.Set && len(e.Name.Raw) > 0
		name := int32(-1)
		if named {
			name = a.name(e.Name)
		}
		if a.record(t, 'E', e.TS, 0, name, named) {
			return
		}
	}
	if len(t.open) == 0 {
		a.problem(e.Line, KindNesting, "an E event with no B open on pid %s tid %s (chrome://tracing: \"E phase event without a matching B phase event\")", e.Pid.Raw, e.Tid.Raw)
		return
	}
	// Perfetto's sorter takes the events of one ts in file order, until
	// the file has had an X: then (slow sorting, in trace_sorter.h) an E
	// first, then X events, the longer first, then the others in file
	// order. The B events of the E's ts have then not begun for it.
	// (Exactly, the order changes from the first event out of order, or
	// at the ts of the one before, once an X came: in a file whose first
	// X comes after a tie, the tie may be sorted or not.)
	later := func(o *openSpan) bool { return a.sawX && o.ts == e.TS }
	if t.cutOpen > 0 {
		// A B cut at a ts before this E's was ended there when time
		// moved past it (Perfetto pops it then): no E ends it now.
		for k := 0; k < len(t.open); {
			if o := t.open[k]; o.cut && o.cutAt < e.TS {
				t.open = append(t.open[:k], t.open[k+1:]...)
				t.cutOpen--
				if a.grouped {
					delete(a.exact, o.seq)
				}
				a.slice(t, o.ts, o.cutAt, o.name, int(o.line), true, o.seq)
				continue
			}
			k++
		}
		if len(t.open) == 0 {
			a.problem(e.Line, KindNesting, "an E event with no B open on pid %s tid %s (chrome://tracing: \"E phase event without a matching B phase event\")", e.Pid.Raw, e.Tid.Raw)
			return
		}
	}
	if !a.sawX {
		// Before the file's first X, the sorter keeps the file's order
		// at one ts, unless it finds an event out of order later: then
		// stats replays the track (see exact.go). (Open B events in the
		// order of their ts, the usual case, are looked at from the top
		// down to the first before the E's ts, not all of them: a deep
		// nest would cost time quadratic in its depth.)
		for k := len(t.open) - 1; k >= 0; k-- {
			if t.open[k].ts == e.TS {
				t.tied, t.tiedAt = true, max(t.tiedAt, e.TS)
				break
			}
			if t.openSorted && t.open[k].ts < e.TS {
				break
			}
		}
	}
	// Perfetto closes the innermost open B of the E's name (any, if the
	// E has none); chrome://tracing closes the innermost, whatever its
	// name.
	inner := len(t.open) - 1
	for inner >= 0 && later(&t.open[inner]) {
		inner--
	}
	i := inner
	named := e.Name.Set && len(e.Name.Raw) > 0
	if i < 0 {
		o := t.open[len(t.open)-1]
		if named && o.name == a.name(e.Name) {
			a.problem(e.Line, KindNesting, "an E event at the ts of its B (line %d) on pid %s tid %s: Perfetto sorts an E before the B events of its ts, so the B never ends; chrome://tracing ends it", o.line, e.Pid.Raw, e.Tid.Raw)
		} else {
			a.problem(e.Line, KindNesting, "an E event with no B open before its ts on pid %s tid %s: Perfetto sorts it before the B of line %d and ignores it; chrome://tracing ends that B with it", e.Pid.Raw, e.Tid.Raw, o.line)
		}
		return
	}
	if named {
		n := a.name(e.Name)
		for i >= 0 && (t.open[i].name != n || later(&t.open[i])) {
			i--
		}
		top := t.open[inner]
		switch {
		case i < 0:
			a.problem(e.Line, KindNesting, "an E event named %q matches no open B on pid %s tid %s: Perfetto ignores it; chrome://tracing ends %q (line %d) with it (\"Titles do not match\")",
				a.Names[n].Name, e.Pid.Raw, e.Tid.Raw, a.Names[top.name].Name, top.line)
			return
		case i < inner:
			a.problemV(e.Line, KindNesting, "misplaced_end_event", "", "an E event named %q ends the B of line %d, but %q (line %d) is open inside it: Perfetto ends the first and cuts the second there (misplaced_end_event); chrome://tracing ends the second (\"Titles do not match\")",
				a.Names[n].Name, t.open[i].line, a.Names[top.name].Name, top.line)
		}
	}
	b := t.open[i]
	t.open = append(t.open[:i], t.open[i+1:]...)
	if b.cut {
		t.cutOpen--
	}
	if a.grouped {
		delete(a.exact, b.seq)
	}
	if e.TS < b.ts {
		a.problem(e.Line, KindNesting, "an E event at ts %s, before its B (line %d) at ts %s", us(e.TS), b.line, us(b.ts))
		return
	}
	// Perfetto ends the B events left open inside it where it ends, if
	// their E comes later (misplaced_end_event); it cuts them when time
	// moves on, so that a B at the E's ts that it takes after the E (see
	// later) begins inside them, and is cut there too.
	inside := false
	for j := i; j < len(t.open); j++ {
		inside = inside || !later(&t.open[j])
	}
	for j := i; inside && j < len(t.open); j++ {
		if o := &t.open[j]; !o.cut || e.TS < o.cutAt {
			if !o.cut {
				t.cutOpen++
			}
			o.cut, o.cutAt = true, e.TS
		}
	}
	if inside && i < len(t.open) {
		a.noteCut(t, e.TS)
	}
	end := e.TS
	if b.cut && b.cutAt < end {
		end = b.cutAt
	}
	a.slice(t, b.ts, end, b.name, int(b.line), true, b.seq)
}

func (a *Analyzer) asyncEvent(e *tracefile.Event, ph byte) {
	if !e.Cat.Set {
		a.problemV(e.Line, KindAsync, "", "async_slice_parse_error", "an async %c event without cat: chrome://tracing drops it", ph)
	}
	if e.ID == nil {
		a.problemV(e.Line, KindAsync, "", "async_slice_parse_error", "an async %c event without id or id2: chrome://tracing drops it", ph)
		return
	}
	if e.Cat.Set {
		a.keepAsync(e, ph)
	}
	// Matched by category, scope and id, as catapult does; an id2.local
	// is the process's own.
	k := append(a.asyncKey[:0], e.Cat.Raw...)
	k = append(k, 0)
	k = append(k, e.Scope.Raw...)
	k = append(k, 0)
	k = append(k, e.ID...)
	if e.IDLocal {
		k = append(k, 0)
		k = append(k, e.Pid.Raw...)
	}
	a.asyncKey = k
	switch ph {
	case 'b':
		a.async[string(k)] = append(a.async[string(k)], OpenAsync{
			Name: quoted(e.Name), Cat: quoted(e.Cat), Scope: quoted(e.Scope),
			ID: bytes.Clone(e.ID), IDLocal: e.IDLocal,
			Pid: bytes.Clone(e.Pid.Raw), Tid: bytes.Clone(e.Tid.Raw), TS: e.TS,
		})
	case 'e':
		st, ok := a.async[string(k)]
		if !ok {
			return // reported by finishAsyncs, which pairs them as the viewers do
		}
		if len(st) <= 1 {
			delete(a.async, string(k))
		} else {
			a.async[string(k)] = st[:len(st)-1]
		}
	}
}

// An OpenAsync is an async slice whose b has no e yet: what an e event
// needs to end it. Its strings are JSON, quotes included (nil when
// absent).
type OpenAsync struct {
	Name, Cat, Scope []byte
	ID               []byte // as written
	IDLocal          bool   // from id2.local
	Pid, Tid         []byte // as written
	TS               int64
}

// quoted returns s as a JSON string, as it was written, or nil if absent.
func quoted(s tracefile.Str) []byte {
	if !s.Set {
		return nil
	}
	return append(append([]byte{'"'}, s.Raw...), '"')
}

// OpenAsyncs returns the async slices still open, oldest first.
func (a *Analyzer) OpenAsyncs() []OpenAsync {
	var o []OpenAsync
	for _, st := range a.async {
		o = append(o, st...)
	}
	slices.SortStableFunc(o, func(x, y OpenAsync) int { return cmp.Compare(x.TS, y.TS) })
	return o
}

func (a *Analyzer) flow(e *tracefile.Event, ph byte) {
	if e.ID == nil {
		a.problem(e.Line, KindFlow, "a flow %c event without id", ph)
		return
	}
	// Perfetto and chrome://tracing bind s, t and f by cat, name and id.
	k := append(a.flowKey[:0], e.Cat.Raw...)
	k = append(k, 0)
	k = append(k, e.Name.Raw...)
	k = append(k, 0)
	k = append(k, e.ID...)
	a.flowKey = k
	id, ok := a.flows[string(k)]
	if !ok {
		id = int32(len(a.flows))
		a.flows[string(k)] = id
	}
	// An f without "bp":"e" binds to the next slice to begin (in
	// catapult, only outside the input and ipc.flow categories).
	next := ph == 'f' && !(e.BP.Set && string(e.BP.Raw) == "e")
	cnext := next && !bytes.Contains(e.Cat.Raw, []byte("input")) && !bytes.Contains(e.Cat.Raw, []byte("ipc.flow"))
	t := a.track(e)
	f := flowEvent{ts: e.TS, seq: a.Events, line: int32(e.Line), ph: ph, id: id, next: next, cnext: cnext, exact: t.exact}
	f.caught, f.bound = t.encloses(e.TS, cnext)
	f.bound = f.bound || next // Perfetto binds it to the next slice, or not, without a word
	i := int32(len(a.flowEvs))
	a.flowEvs = append(a.flowEvs, f)
	if t.exact || t.keep {
		a.recordRaw(t, rawSlice{ts: e.TS, seq: a.Events, ph: ph, flow: i, line: a.line})
	}
	if !f.caught || !f.bound {
		t.pending = append(t.pending, pendingFlow{ts: e.TS, line: int32(e.Line), next: cnext, i: i})
	}
}

// A flowEvent is an s, t or f event, kept to the end of the file, when
// the viewers' verdicts on it are known (see finishFlows).
type flowEvent struct {
	ts, seq int64
	line    int32
	id      int32 // its flow: category, name and id
	ph      byte
	next    bool // an f without "bp":"e" (Perfetto binds it to the next slice)
	cnext   bool // catapult binds it to the next slice after it
	caught  bool // catapult finds a slice around it (or after it, if cnext)
	bound   bool // Perfetto's slice stack holds a slice at it, surely
	unbound bool // a replay found the stack empty at it (see PerfettoFlows)
	exact   bool // of a track replayed: see ReplayedFlows
}

// FlowTracks returns the tracks with flow events whose binding in
// Perfetto only a replay of the track tells (see replay): Perfetto binds
// a flow event to the slice on top of its thread's stack, which holds a
// slice that ended until another slice event of the thread comes, and
// takes an E before the events of its ts.
func (a *Analyzer) FlowTracks() TrackSet {
	return a.tracksWhere(func(t *track) bool {
		for _, f := range t.pending {
			if !a.flowEvs[f.i].bound {
				return true
			}
		}
		return false
	})
}

// PerfettoFlows takes, from another Analyzer of the same file that
// replayed o's FlowTracks, which flow events Perfetto binds to no slice.
func (a *Analyzer) PerfettoFlows(o *Analyzer) {
	for i := range a.flowEvs {
		if i < len(o.flowEvs) && !a.flowEvs[i].bound {
			a.flowEvs[i].bound = !o.flowEvs[i].unbound
		}
	}
}

// ReplayedFlows gives the flow events of the tracks a replayed the
// verdicts the viewers give them: catapult's, as o found them (another
// Analyzer of the same file, which followed those tracks as their events
// came, or a itself, for tracks replayed from what it kept), and
// Perfetto's, from the replay where o was not sure. A track replayed is
// not followed as it comes, so a finds no slice around its flow events.
// o may have stopped before the end: the flow events it did not read
// keep a's verdicts. Call it after FinishExact.
func (a *Analyzer) ReplayedFlows(o *Analyzer) {
	for i := range a.flowEvs {
		f := &a.flowEvs[i]
		if !f.exact {
			continue
		}
		if o != a && i < len(o.flowEvs) {
			f.caught, f.bound = o.flowEvs[i].caught, o.flowEvs[i].bound
		}
		f.bound = f.bound || !f.unbound
	}
}

// finishFlows reports what the viewers make of the flow events, in the
// order each takes them (by ts, then the file's): chrome://tracing binds
// an s, t or f to a slice of its thread around its ts (an f without
// "bp":"e" to the next slice after it), warns of one it finds none for
// (flow_slice_start_error, flow_slice_end_error), of an s whose id is
// open (flow_slice_start_error) and of a t or f whose flow is not
// (flow_slice_ordering_error); Perfetto binds it to the top of its
// thread's slice stack, and counts one it finds empty
// (flow_no_enclosing_slice) and an s whose id is open (flow_duplicate_id).
func (a *Analyzer) finishFlows(unterminated bool) {
	evs := a.flowEvs
	order := make([]int32, len(evs))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortStableFunc(order, func(x, y int32) int { return cmp.Compare(evs[x].ts, evs[y].ts) })
	copen := map[int32]bool{}
	popen := map[int32]bool{}
	for _, i := range order {
		f := &evs[i]
		var cat, why, perf, pwhy string
		switch {
		case f.ph == 's' && copen[f.id]:
			cat, why = "flow_slice_start_error", "chrome://tracing: a flow of its id is open already (flow_slice_start_error)"
		case f.ph == 's' && !f.caught:
			cat, why = "flow_slice_start_error", "chrome://tracing finds no slice of its thread around it (flow_slice_start_error)"
		case f.ph == 's':
			copen[f.id] = true
		case !copen[f.id]:
			cat, why = "flow_slice_ordering_error", "chrome://tracing: no flow of its id is open at it (flow_slice_ordering_error)"
		default:
			delete(copen, f.id)
			if !f.caught {
				where := "around"
				if f.cnext {
					where = "after"
				}
				cat, why = "flow_slice_end_error", "chrome://tracing finds no slice of its thread "+where+" it (flow_slice_end_error)"
			} else if f.ph == 't' {
				copen[f.id] = true
			}
		}
		switch {
		case !f.bound:
			perf, pwhy = "flow_no_enclosing_slice", "Perfetto finds no slice open on its thread at it (flow_no_enclosing_slice)"
		case f.ph == 's' && popen[f.id]:
			perf, pwhy = "flow_duplicate_id", "Perfetto: a flow of its id is open already (flow_duplicate_id)"
		case f.ph == 's':
			popen[f.id] = true
		case f.ph == 'f' && !f.next:
			delete(popen, f.id)
		}
		if cat == "" && perf == "" {
			continue
		}
		msg := strings.Join(slices.DeleteFunc([]string{pwhy, why}, func(s string) bool { return s == "" }), "; ")
		if unterminated {
			msg += " (the file is cut: a span around it may not have been written)"
		}
		a.problemV(int(f.line), KindFlow, perf, cat, "a flow %c event at ts %s draws no arrow, or not the one meant: %s", f.ph, us(f.ts), msg)
	}
	a.flowEvs = nil
}

func (a *Analyzer) counter(e *tracefile.Event) {
	if len(e.Args) == 0 {
		a.problemV(e.Line, KindCounter, "json_parser_failure", "", "a counter without args: Perfetto fails on it (json_parser_failure)")
		return
	}
	p := a.process(e.Pid)
	for i := range e.Args {
		arg := &e.Args[i]
		v, ok := arg.Number()
		if !ok {
			a.problemV(e.Line, KindCounter, "json_parser_failure", "", "counter %q has a value that is not a number (%s): Perfetto fails on it (json_parser_failure)", e.Name.String(), arg.Value)
			continue
		}
		if !e.Name.Escaped && string(e.Name.Raw) == "tracer.dropped" {
			p.Dropped = v
		}
		if !a.Stats {
			continue
		}
		k := append(a.counterKey[:0], e.Pid.Raw...)
		k = append(k, 0)
		k = append(k, e.Name.Raw...)
		k = append(k, 0)
		k = append(k, arg.Key.Raw...)
		a.counterKey = k
		i, ok := a.counterIdx[string(k)]
		if !ok {
			i = int32(len(a.Counters))
			a.Counters = append(a.Counters, &CounterStats{Pid: pidString(e.Pid), Name: e.Name.String(), Key: arg.Key.String(), Min: v, Max: v})
			a.counterIdx[string(k)] = i
		}
		c := a.Counters[i]
		c.N++
		c.Sum += v
		c.Min = min(c.Min, v)
		c.Max = max(c.Max, v)
	}
}

func pidString(n tracefile.Num) string {
	if n.Kind == tracefile.NumString {
		return strconv.Quote(string(n.Str))
	}
	return string(n.Raw)
}

func (a *Analyzer) process(pid tracefile.Num) *Process {
	k := a.numKey(pid)
	p := a.procIdx[k]
	if p == nil {
		p = &Process{Pid: clone(pid)}
		a.procIdx[k] = p
		a.Processes = append(a.Processes, p)
	}
	return p
}

func (a *Analyzer) metadata(e *tracefile.Event) {
	a.catapultMetadata(e)
	if e.Name.Escaped {
		return
	}
	switch string(e.Name.Raw) {
	case "process_name":
		p := a.process(e.Pid)
		if n := e.Arg("name"); n != nil && n.Str.Set {
			p.Name = n.Str.String()
		}
		if t := e.Arg("ts0_unix_ns"); t != nil && t.IsNum {
			p.Anchor, p.HasAnchor = anchor(t.Value), true
		}
	case "thread_name":
		if n := e.Arg("name"); n != nil && n.Str.Set {
			a.track(e).name = n.Str.String()
		}
	}
}

// anchor parses ts0_unix_ns, which is too large for a float64 to hold
// exactly.
func anchor(v []byte) int64 {
	if n, err := strconv.ParseInt(string(v), 10, 64); err == nil {
		return n
	}
	f, _ := strconv.ParseFloat(string(v), 64)
	return int64(f)
}

// Finish reports what can be known only at the end of the file: flow
// events no slice came to enclose. In a file cut short by a crash
// (unterminated), flow events after the last slice of their track are
// not reported: the spans around them were still open, and their X
// events, written when a span ends, were never written.
func (a *Analyzer) Finish(unterminated bool) {
	a.stopKeeping()
	if a.Stats {
		a.resolveDepths()
	}
	a.finishAsyncs()
	for _, t := range a.trackList {
		if t.levels > maxNesting {
			a.problemV(int(t.deepLine), KindDepth, "slice_max_depth_exceeded", "", "this slice holds slices %d levels deep on pid %s tid %s: Perfetto keeps %d levels and drops the slices below (slice_max_depth_exceeded); chrome://tracing shows them", t.levels, t.pid.Raw, t.tid.Raw, maxNesting)
		}
		t.pending = nil
	}
	a.finishFlows(unterminated)
}

// Tracks returns the numbers of the tracks that hold slices, in the order
// they were first seen.
func (a *Analyzer) Tracks() []TrackStats {
	var ts []TrackStats
	for _, t := range a.trackList {
		if t.slices == 0 {
			continue
		}
		process := ""
		if p := a.procIdx[a.numKey(t.pid)]; p != nil {
			process = p.Name
		}
		ts = append(ts, TrackStats{Pid: pidString(t.pid), Tid: pidString(t.tid), Process: process, Name: t.name, Slices: t.slices, Busy: t.busy})
	}
	return ts
}

// OpenSpan is a B event whose E is not in the file.
type OpenSpan struct {
	Pid, Tid tracefile.Num
	Name     string
	TS       int64
}

// EndOpen ends every span still open (a B without its E) at ts, the way
// a trace cut by a crash is read: each lasts to the end of the trace, as
// both viewers draw it. It returns how many it ended. Call it before
// Finish, once every event is added.
func (a *Analyzer) EndOpen(ts int64) int {
	a.stopKeeping()
	n := 0
	for _, t := range a.trackList {
		for !t.exact && len(t.open) > 0 { // an exact track's are its replay's
			b := t.open[len(t.open)-1]
			t.open = t.open[:len(t.open)-1]
			if a.grouped {
				delete(a.exact, b.seq)
			}
			end := max(ts, b.ts)
			if b.cut && b.cutAt < end {
				end = b.cutAt
			}
			a.slice(t, b.ts, end, b.name, int(b.line), true, b.seq)
			n++
		}
	}
	return n
}

// Open returns the B events still open, innermost first per track.
func (a *Analyzer) Open() []OpenSpan {
	var o []OpenSpan
	for _, t := range a.trackList {
		for i := len(t.open) - 1; i >= 0; i-- {
			name, ok := a.exact[t.open[i].seq]
			if !ok {
				name = a.Names[t.open[i].name].Name
			}
			o = append(o, OpenSpan{Pid: t.pid, Tid: t.tid, Name: name, TS: t.open[i].ts})
		}
	}
	return o
}
