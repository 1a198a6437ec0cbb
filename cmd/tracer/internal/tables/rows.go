// Package tables turns trace files into the rows of the tables that
// "tracer export -format parquet" writes and "tracer sql" queries: slice,
// thread, process, track, counter and flow, named and shaped like
// trace_processor's tables of the same names so that a Perfetto user's
// queries carry over (docs/analysis.md is the schema's documentation).
//
// A Builder reads events as a stream and hands rows to a Sink as soon as
// they are complete. A slice's depth and parent need its ancestors, which
// a file may hold after it (the tracer package writes a span when it
// ends, children first): see forest.go for how long a slice waits and
// the bound on that.
//
// Every column has a type Spark and DuckDB read alike: signed integers,
// doubles and UTF-8 strings, no unsigned integers.
package tables

// A Slice is a row of the slice table: a span (X, or a B/E pair), an
// async operation (b/e) or an instant (i, n, with dur 0), as in
// trace_processor.
type Slice struct {
	ID       int64   `parquet:"id"`
	TS       int64   `parquet:"ts"`  // nanoseconds, on the clock of the earliest process
	Dur      int64   `parquet:"dur"` // nanoseconds; -1 for a span never ended
	TrackID  int64   `parquet:"track_id"`
	Category string  `parquet:"category,dict"`
	Name     string  `parquet:"name,dict"`
	Depth    int32   `parquet:"depth"`              // 0 for a slice no other slice of its track encloses
	ParentID *int64  `parquet:"parent_id,optional"` // the enclosing slice one level up
	Args     *string `parquet:"args,optional"`      // the args object, as JSON text
	Utid     *int64  `parquet:"utid,optional"`      // the thread, for a slice on a thread's track
	Upid     *int64  `parquet:"upid,optional"`      // the process, unless on a global track
}

// A Thread is a row of the thread table.
type Thread struct {
	Utid int64  `parquet:"utid"` // unique over all the files
	Tid  int64  `parquet:"tid"`
	Name string `parquet:"name"`
	Upid int64  `parquet:"upid"`
}

// A Process is a row of the process table.
type Process struct {
	Upid      int64  `parquet:"upid"` // unique over all the files
	Pid       int64  `parquet:"pid"`
	Name      string `parquet:"name"`
	File      string `parquet:"file"`                 // the trace file it came from (the first, for a rotated set)
	TS0UnixNS *int64 `parquet:"ts0_unix_ns,optional"` // the wall-clock time of its ts 0, when the file has it
	Offset    int64  `parquet:"ts_offset"`            // ns added to its timestamps to line it up with the others
}

// A Track is a row of the track table: a thread's track, an async
// track, an instant track of a process or of the trace, or a counter.
type Track struct {
	ID   int64  `parquet:"id"`
	Name string `parquet:"name"`
	Type string `parquet:"type"` // thread, async, process, global or counter
	Utid *int64 `parquet:"utid,optional"`
	Upid *int64 `parquet:"upid,optional"`
}

// A Counter is a row of the counter table: one value of one series. A C
// event with several args makes one row per arg, each on its own track
// named "NAME KEY", as in trace_processor.
type Counter struct {
	ID      int64   `parquet:"id"`
	TS      int64   `parquet:"ts"`
	TrackID int64   `parquet:"track_id"`
	Value   float64 `parquet:"value"`
	Name    string  `parquet:"name"` // the track's name, NAME KEY
	Upid    int64   `parquet:"upid"`
}

// A Flow is a row of the flow table: an arrow from one slice to the next
// slice of the same flow (s to t, t to t, t or s to f).
type Flow struct {
	ID       int64  `parquet:"id"`
	SliceOut int64  `parquet:"slice_out"`
	SliceIn  int64  `parquet:"slice_in"`
	Name     string `parquet:"name"`
	Category string `parquet:"category,dict"`
}

// A Sink takes the rows a Builder makes. Slices, counters and flows come
// while the events are read; tracks, threads and processes when Close
// is called. A row's strings and pointers may be reused after the call.
type Sink interface {
	Slice(*Slice) error
	Counter(*Counter) error
	Flow(*Flow) error
	Track(*Track) error
	Thread(*Thread) error
	Process(*Process) error
}
