package parquet

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	pq "github.com/parquet-go/parquet-go"

	"github.com/gotracer/tracer/cmd/tracer/internal/tables"
)

// rowGroup is the most rows a Parquet file's row group holds: a row
// group is buffered whole before it is written, so this bounds memory.
const rowGroup = 128 << 10

// codec compresses the columns: Snappy, which Spark, DuckDB and pandas
// read, and the fastest of those they all read.
var codec = &fastSnappy{}

// The tables, each a directory of dir holding part-NNNNN.parquet files.
var tableNames = []string{"slice", "counter", "flow", "track", "thread", "process"}

// Export reads the trace files at paths and writes their tables to dir,
// which must not hold tables already: dir/slice/part-00000.parquet and
// so on, one part per process (see tables.Plan) for slice, counter and
// flow, one part for track, thread and process. Spark and DuckDB read a
// table's directory as one table.
func Export(dir string, paths []string, maxPending int) (tables.Report, error) {
	for _, name := range tableNames {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			return tables.Report{}, fmt.Errorf("%s already holds a %s table: export to a new directory", dir, name)
		}
	}
	_, statErr := os.Stat(dir)
	made := errors.Is(statErr, fs.ErrNotExist)
	for _, name := range tableNames {
		if err := os.MkdirAll(filepath.Join(dir, name), 0o755); err != nil {
			return tables.Report{}, err
		}
	}
	s := &sink{dir: dir}
	b := tables.NewBuilder(s)
	b.MaxPending = maxPending
	err := errors.Join(b.Build(paths, s.begin), s.close())
	if err != nil {
		// Half a table is worse than none: the directories are ours
		// (they did not exist), and a new export can then be run.
		for _, name := range tableNames {
			os.RemoveAll(filepath.Join(dir, name))
		}
		if made {
			os.Remove(dir)
		}
	}
	return b.Report, err
}

// A sink writes the rows of the tables to Parquet files.
type sink struct {
	dir       string
	slices    *sliceTable
	counters  *table[tables.Counter]
	flows     *table[tables.Flow]
	tracks    *table[tables.Track]
	threads   *table[tables.Thread]
	processes *table[tables.Process]
}

// begin starts the parts of the next process.
func (s *sink) begin(group int) error {
	if err := s.closeParts(); err != nil {
		return err
	}
	part := fmt.Sprintf("part-%05d.parquet", group)
	var err error
	s.slices, err = newSliceTable(filepath.Join(s.dir, "slice", part))
	if err == nil {
		s.counters, err = newTable[tables.Counter](filepath.Join(s.dir, "counter", part))
	}
	if err == nil {
		s.flows, err = newTable[tables.Flow](filepath.Join(s.dir, "flow", part))
	}
	return err
}

func (s *sink) closeParts() error {
	var errs []error
	if s.slices != nil {
		errs = append(errs, s.slices.close())
	}
	if s.counters != nil {
		errs = append(errs, s.counters.close())
	}
	if s.flows != nil {
		errs = append(errs, s.flows.close())
	}
	s.slices, s.counters, s.flows = nil, nil, nil
	return errors.Join(errs...)
}

func (s *sink) close() error {
	errs := []error{s.closeParts()}
	// Made at the end only: nil if the export failed before.
	if s.tracks != nil {
		errs = append(errs, s.tracks.close())
	}
	if s.threads != nil {
		errs = append(errs, s.threads.close())
	}
	if s.processes != nil {
		errs = append(errs, s.processes.close())
	}
	return errors.Join(errs...)
}

func (s *sink) Slice(r *tables.Slice) error     { return s.slices.add(r) }
func (s *sink) Counter(r *tables.Counter) error { return s.counters.add(r) }
func (s *sink) Flow(r *tables.Flow) error       { return s.flows.add(r) }

func (s *sink) Track(r *tables.Track) error {
	return lazy(&s.tracks, filepath.Join(s.dir, "track", "part-00000.parquet"), r)
}

func (s *sink) Thread(r *tables.Thread) error {
	return lazy(&s.threads, filepath.Join(s.dir, "thread", "part-00000.parquet"), r)
}

func (s *sink) Process(r *tables.Process) error {
	return lazy(&s.processes, filepath.Join(s.dir, "process", "part-00000.parquet"), r)
}

// lazy adds r to *t, creating the table at path first.
func lazy[T any](t **table[T], path string, r *T) error {
	if *t == nil {
		var err error
		if *t, err = newTable[T](path); err != nil {
			return err
		}
	}
	return (*t).add(r)
}

// A table is one Parquet file being written: its rows are encoded and
// compressed on a goroutine of its own (see tables.Pipe).
type table[T any] struct {
	f    *os.File
	w    *pq.GenericWriter[T]
	pipe *tables.Pipe[T]
}

func newTable[T any](path string) (*table[T], error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	t := &table[T]{f: f, w: pq.NewGenericWriter[T](f, pq.Compression(codec), pq.MaxRowsPerRowGroup(rowGroup))}
	t.pipe = tables.NewPipe(func(rows []T) error {
		_, err := t.w.Write(rows)
		return err
	})
	return t, nil
}

func (t *table[T]) add(r *T) error { return t.pipe.Add(r) }

func (t *table[T]) close() error {
	err := t.pipe.Close()
	if err == nil {
		err = t.w.Close()
	}
	return errors.Join(err, t.f.Close())
}
