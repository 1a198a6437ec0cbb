package tracetest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/gotracer/tracer"
)

// A Recorder holds the spans recorded while a test runs, for the test to
// assert on, as zaptest/observer holds log entries and OpenTelemetry's
// tracetest.SpanRecorder holds spans. Make one with Record.
type Recorder struct {
	tb     testing.TB
	mem    *memory
	offset int    // where this recorder's events start in mem
	g      uint64 // the goroutine that called Record: the test's
}

// Span is one span as the trace holds it.
type Span struct {
	Name     string
	Category string         // "" without a category
	Args     map[string]any // the start's and the end's args; see Recorder.Spans for the types
	Start    time.Time
	Duration time.Duration
	// Goroutine is the id of the goroutine that recorded the span (its
	// track, tid in the file); GoroutineName its name, if it was given one
	// with tracer.SetGoroutineName.
	Goroutine     uint64
	GoroutineName string
	// Parent is the innermost span of the same goroutine that encloses
	// this one, nil for a span at the top of its goroutine: the span that
	// was open when this one started, as a viewer draws them.
	Parent *Span
}

// memory is what Record's Recorders read, shared by every live Recorder:
// there is one default tracer, and code under test records into it
// through the package-level functions. It is the default tracer's own
// writer if Record started it, or a tee of the default tracer that runs
// already (TRACER_FILE, tracer.Start, -tracer.out).
type memory struct {
	t     *tracer.Tracer // the tracer Record started, nil if it tees another
	tee   *tracer.Tee    // the tee of the default tracer, nil if Record started it
	mu    sync.Mutex
	buf   bytes.Buffer
	live  int                 // Recorders not yet cleaned up
	tests map[uint64]struct{} // the goroutines that called Record while t ran
}

// flush makes every span recorded so far reach m.
func (m *memory) flush() error {
	if m.tee != nil {
		return m.tee.Flush()
	}
	return m.t.Flush()
}

// stop stops the tracer Record started, or the tee.
func (m *memory) stop() {
	if m.tee != nil {
		m.tee.Stop()
		return
	}
	if tracer.Default() == m.t {
		tracer.Stop()
	} else {
		m.t.Close()
	}
}

func (m *memory) Write(p []byte) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.buf.Write(p)
}

var (
	memMu sync.Mutex // guards cur and the default tracer's start and stop by Record
	cur   *memory
)

// Record makes the default tracer record into memory until tb's cleanup,
// and returns the Recorder that reads it: the spans that the test and the
// code it calls record through the package-level functions (tracer.Span,
// defer tracer.Span(name)(), tracehttp, traceotel...).
//
//	rec := tracetest.Record(t)
//	handle(req)
//	spans := rec.Spans()
//
// Tests that call Record share one default tracer, alive while any of
// them runs, so they may run in parallel (t.Parallel). If a default tracer
// runs already (tracer.Start, TRACER_FILE or -tracer.out), Record reads a
// tee of it (see tracer.Tee), and its file gets the tests' spans too;
// otherwise Record starts one, lossless (tracer.WithLossless), that writes
// to memory only. Call Record on the test's goroutine: its spans are told
// apart from other tests' by it (see Spans).
func Record(tb testing.TB) *Recorder {
	tb.Helper()
	memMu.Lock()
	defer memMu.Unlock()
	if cur == nil {
		m, err := record()
		if err != nil {
			tb.Fatalf("tracetest.Record: %v", err)
		}
		cur = m
	}
	m := cur
	if err := m.flush(); err != nil {
		tb.Fatalf("tracetest.Record: %v", err)
	}
	g := goroutineID()
	m.mu.Lock()
	r := &Recorder{tb: tb, mem: m, offset: m.buf.Len(), g: g}
	m.tests[g] = struct{}{}
	m.mu.Unlock()
	m.live++
	tb.Cleanup(func() {
		memMu.Lock()
		defer memMu.Unlock()
		if m.live--; m.live == 0 {
			// The last one out stops the tracer or the tee, so a later
			// test may start one of its own, and the memory is freed.
			m.stop()
			cur = nil
		}
	})
	return r
}

// record starts the memory Recorders read: a tee of the default tracer
// if one runs, else a default tracer of its own.
func record() (*memory, error) {
	m := &memory{tests: map[uint64]struct{}{}}
	for {
		if d := tracer.Default(); d != nil {
			tee, err := d.Tee(m)
			if errors.Is(err, tracer.ErrClosed) {
				continue // stopped meanwhile
			}
			m.tee = tee
			return m, err
		}
		t, err := tracer.NewWithWriter(m, tracer.WithLossless()) // lossless: a test asserts on every span
		if err != nil {
			return nil, err
		}
		if err = tracer.SetDefault(t); err == nil {
			m.t = t
			return m, nil
		}
		t.Close()
		m.buf.Reset()
		if !errors.Is(err, tracer.ErrStarted) {
			return nil, err
		}
	}
}

// Spans flushes the default tracer and returns, in order of their start,
// the spans that ended since Record on the goroutines of this test: the
// test's own goroutine, and every other goroutine except those on which
// other tests called Record. Spans still open are left out.
//
// In parallel tests (t.Parallel) each test sees its own goroutine's
// spans, never another Recorder's test's. Goroutines the code under test
// starts cannot be told apart by test: every live Recorder sees their
// spans, as it sees those of parallel tests that do not call Record.
// Filter by Goroutine, GoroutineName or Parent if such tests overlap, or
// do not run them in parallel.
//
// Args hold what the trace holds, as its JSON reads:
//
//   - string: tracer.String, and the args the tracer writes as text:
//     tracer.Duration ("1.5ms", as time.Duration's String method writes
//     it), tracer.Time (RFC 3339), tracer.Stringer, tracer.Err, and a
//     tracer.Float64 that is NaN or infinite ("NaN", "+Inf", "-Inf");
//   - bool: tracer.Bool;
//   - int64: a number written without a fraction: tracer.Int, tracer.Int64,
//     a tracer.Uint64 up to math.MaxInt64, a tracer.Float64 with an
//     integral value;
//   - float64: any other number: a tracer.Float64 with a fraction, a
//     tracer.Uint64 above math.MaxInt64 (rounded).
func (r *Recorder) Spans() []Span {
	r.tb.Helper()
	if err := r.mem.flush(); err != nil {
		r.tb.Fatalf("tracetest: %v", err)
	}
	r.mem.mu.Lock()
	data := bytes.Clone(r.mem.buf.Bytes())
	others := make(map[uint64]bool, len(r.mem.tests))
	for g := range r.mem.tests {
		others[g] = g != r.g
	}
	r.mem.mu.Unlock()
	spans, err := parseSpans(data, r.offset)
	if err != nil {
		r.tb.Fatalf("tracetest: reading the recorded trace: %v", err)
	}
	own := spans[:0]
	for _, s := range spans {
		if !others[s.Goroutine] {
			own = append(own, s)
		}
	}
	return own
}

// Named returns the spans of Spans with the given name.
func (r *Recorder) Named(name string) []Span {
	r.tb.Helper()
	var out []Span
	for _, s := range r.Spans() {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

// event is a trace event, as much of it as Spans reads.
type event struct {
	Name string                     `json:"name"`
	Cat  string                     `json:"cat"`
	Ph   string                     `json:"ph"`
	Ts   json.Number                `json:"ts"`
	Dur  json.Number                `json:"dur"`
	Tid  uint64                     `json:"tid"`
	Args map[string]json.RawMessage `json:"args"`
}

// parseSpans reads the events of a trace written to a writer (the array
// form, one event a line): the metadata from the start, the spans from
// offset. A span written as B and E is paired on its goroutine in file
// order, as the viewers pair them.
func parseSpans(data []byte, offset int) ([]Span, error) {
	var (
		ts0   time.Time
		names = map[uint64]string{}
		spans []*Span
		open  = map[uint64][]*Span{} // B events waiting for their E, per goroutine
	)
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<26)
	pos := 0
	for sc.Scan() {
		line := bytes.TrimSuffix(bytes.TrimSpace(sc.Bytes()), []byte(","))
		inWindow := pos >= offset
		pos += len(sc.Bytes()) + 1
		if len(line) == 0 || line[0] != '{' {
			continue // "[" and "]"
		}
		var e event
		if err := json.Unmarshal(line, &e); err != nil {
			return nil, fmt.Errorf("%w in %q", err, line)
		}
		switch {
		case e.Ph == "M" && e.Name == "process_name":
			var ns int64
			if raw, ok := e.Args["ts0_unix_ns"]; ok {
				if err := json.Unmarshal(raw, &ns); err != nil {
					return nil, fmt.Errorf("ts0_unix_ns: %w", err)
				}
			}
			ts0 = time.Unix(0, ns)
		case e.Ph == "M" && e.Name == "thread_name":
			var name string
			json.Unmarshal(e.Args["name"], &name)
			names[e.Tid] = name
		case !inWindow:
		case e.Ph == "X" || e.Ph == "B":
			s := &Span{Name: e.Name, Category: e.Cat, Goroutine: e.Tid}
			start, err := micros(e.Ts)
			if err != nil {
				return nil, err
			}
			s.Start = ts0.Add(start)
			if s.Args, err = decodeArgs(e.Args, nil); err != nil {
				return nil, err
			}
			if e.Ph == "B" {
				open[e.Tid] = append(open[e.Tid], s)
				continue
			}
			if s.Duration, err = micros(e.Dur); err != nil {
				return nil, err
			}
			spans = append(spans, s)
		case e.Ph == "E":
			stack := open[e.Tid]
			if len(stack) == 0 {
				continue // its B is before the window
			}
			s := stack[len(stack)-1]
			open[e.Tid] = stack[:len(stack)-1]
			end, err := micros(e.Ts)
			if err != nil {
				return nil, err
			}
			s.Duration = ts0.Add(end).Sub(s.Start)
			if s.Args, err = decodeArgs(e.Args, s.Args); err != nil {
				return nil, err
			}
			spans = append(spans, s)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	// Outer spans first where two start at once, so that a parent comes
	// before its children.
	sort.SliceStable(spans, func(i, j int) bool {
		a, b := spans[i], spans[j]
		if !a.Start.Equal(b.Start) {
			return a.Start.Before(b.Start)
		}
		return a.Duration > b.Duration
	})
	enclosing := map[uint64][]*Span{} // per goroutine, the spans that enclose the next start
	out := make([]Span, len(spans))
	for i, s := range spans {
		s.GoroutineName = names[s.Goroutine]
		stack := enclosing[s.Goroutine]
		for len(stack) > 0 && !s.Start.Before(end(stack[len(stack)-1])) {
			stack = stack[:len(stack)-1]
		}
		if len(stack) > 0 {
			s.Parent = stack[len(stack)-1]
		}
		enclosing[s.Goroutine] = append(stack, s)
		out[i] = *s
	}
	return out, nil
}

func end(s *Span) time.Time { return s.Start.Add(s.Duration) }

// micros converts a ts or dur of the file (microseconds, three decimals)
// to a Duration, exactly.
func micros(n json.Number) (time.Duration, error) {
	s := string(n)
	if s == "" {
		return 0, nil
	}
	whole, frac, _ := bytes.Cut([]byte(s), []byte("."))
	us, err := strconv.ParseInt(string(whole), 10, 64)
	if err != nil || len(frac) > 3 {
		return 0, fmt.Errorf("time %q is not microseconds with up to 3 decimals", s)
	}
	ns := 0
	for i := 0; i < 3; i++ {
		ns *= 10
		if i < len(frac) {
			if frac[i] < '0' || frac[i] > '9' {
				return 0, fmt.Errorf("time %q is not microseconds with up to 3 decimals", s)
			}
			ns += int(frac[i] - '0')
		}
	}
	return time.Duration(us)*time.Microsecond + time.Duration(ns), nil
}

// decodeArgs adds args to into (a new map if into is nil) with the value
// types Spans documents.
func decodeArgs(args map[string]json.RawMessage, into map[string]any) (map[string]any, error) {
	if len(args) == 0 {
		return into, nil
	}
	if into == nil {
		into = make(map[string]any, len(args))
	}
	for k, raw := range args {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("arg %q: %w", k, err)
		}
		if n, ok := v.(json.Number); ok {
			if i, err := n.Int64(); err == nil {
				v = i
			} else if f, err := n.Float64(); err == nil {
				v = f
			} else {
				return nil, errors.Join(fmt.Errorf("arg %q: %s is not a number", k, n), err)
			}
		}
		into[k] = v
	}
	return into, nil
}

// goroutineID parses the calling goroutine's id from its stack trace's
// first line, "goroutine 123 [running]:", which is the tid of its events.
func goroutineID() uint64 {
	var buf [64]byte
	s := buf[:runtime.Stack(buf[:], false)]
	s = bytes.TrimPrefix(s, []byte("goroutine "))
	if i := bytes.IndexByte(s, ' '); i > 0 {
		s = s[:i]
	}
	id, _ := strconv.ParseUint(string(s), 10, 64)
	return id
}
