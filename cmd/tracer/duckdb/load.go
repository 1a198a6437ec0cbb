package duckdb

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"reflect"
	"strings"

	duck "github.com/duckdb/duckdb-go/v2"

	"github.com/gotracer/tracer/cmd/tracer/internal/tables"
)

// DefaultMaxPending is the default DB.MaxPending: 128K slices, about
// 30 MB of them waiting. (The Builder's own default, a million, is
// export's, which cannot rewrite its rows.)
const DefaultMaxPending = 1 << 17

// A DB is an in-memory DuckDB database holding the tables of traces.
type DB struct {
	*sql.DB
	// MaxPending bounds the slices Load keeps waiting for an enclosing
	// slice (tables.Builder.MaxPending); 0 means DefaultMaxPending.
	// Slices written before one that encloses them came are nested again
	// once every row is in (see renest.go): the bound costs no exactness,
	// only the time of that.
	MaxPending int

	conn   driver.Conn // the Appenders' connection (see Load)
	slices *sql.Conn   // the slices': their INSERT runs on it (see slices.go)
}

// Open returns an empty in-memory database.
func Open() (*DB, error) {
	c, err := duck.NewConnector("", nil)
	if err != nil {
		return nil, err
	}
	db := &DB{DB: sql.OpenDB(c)}
	if db.conn, err = c.Connect(context.Background()); err == nil {
		db.slices, err = db.DB.Conn(context.Background())
	}
	if err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// Close closes the database.
func (db *DB) Close() error {
	var errs []error
	if db.slices != nil {
		errs = append(errs, db.slices.Close())
	}
	if db.conn != nil {
		errs = append(errs, db.conn.Close())
	}
	return errors.Join(append(errs, db.DB.Close())...)
}

// rowTypes are the tables, by name, in the order they are created.
var rowTypes = []struct {
	name string
	typ  reflect.Type
}{
	{"slice", reflect.TypeFor[tables.Slice]()},
	{"counter", reflect.TypeFor[tables.Counter]()},
	{"flow", reflect.TypeFor[tables.Flow]()},
	{"track", reflect.TypeFor[tables.Track]()},
	{"thread", reflect.TypeFor[tables.Thread]()},
	{"process", reflect.TypeFor[tables.Process]()},
}

// sliceType is the slice table's row type.
var sliceType = rowTypes[0].typ

// A column is a column of a table, named as in its row type's parquet
// tags, so that both outputs agree.
type column struct {
	name     string
	sqlType  string // NOT NULL but for a pointer field's
	duckType duck.Type
}

// columnsOf returns the columns of a row type.
func columnsOf(t reflect.Type) []column {
	var cols []column
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("parquet"), ",")
		typ := f.Type
		null := typ.Kind() == reflect.Pointer
		if null {
			typ = typ.Elem()
		}
		c := column{name: name}
		switch typ.Kind() {
		case reflect.Int64:
			c.sqlType, c.duckType = "BIGINT", duck.TYPE_BIGINT
		case reflect.Int32:
			c.sqlType, c.duckType = "INTEGER", duck.TYPE_INTEGER
		case reflect.Float64:
			c.sqlType, c.duckType = "DOUBLE", duck.TYPE_DOUBLE
		case reflect.String:
			c.sqlType, c.duckType = "VARCHAR", duck.TYPE_VARCHAR
		default:
			panic("tables: a column of type " + typ.String())
		}
		if !null {
			c.sqlType += " NOT NULL"
		}
		cols = append(cols, c)
	}
	return cols
}

// createTable returns the CREATE TABLE statement of a row type.
func createTable(name string, t reflect.Type) string {
	var cols []string
	for _, c := range columnsOf(t) {
		cols = append(cols, fmt.Sprintf("%q %s", c.name, c.sqlType))
	}
	return fmt.Sprintf("CREATE TABLE %q (%s)", name, strings.Join(cols, ", "))
}

// Load reads the trace files at paths into the database's tables
// (created here), as a stream.
func (db *DB) Load(paths []string) (tables.Report, error) {
	s := &sink{}
	defer func() {
		for _, a := range s.app {
			a.Close()
		}
	}()
	for _, rt := range rowTypes {
		if _, err := db.Exec(createTable(rt.name, rt.typ)); err != nil {
			return tables.Report{}, err
		}
		if rt.typ == sliceType {
			continue // see slices.go
		}
		a, err := duck.NewAppenderFromConn(db.conn, "", rt.name)
		if err != nil {
			return tables.Report{}, err
		}
		s.app = append(s.app, a)
	}
	loader, err := loadSlices(db.slices)
	if err != nil {
		return tables.Report{}, err
	}
	s.slices = tables.NewPipe(loader.write)
	b := tables.NewBuilder(s)
	b.InOpen = true // Late tracks are nested again below
	b.MaxPending = db.MaxPending
	if b.MaxPending <= 0 {
		b.MaxPending = DefaultMaxPending
	}
	err = errors.Join(b.Build(paths, nil), s.slices.Close(), loader.finish())
	for _, a := range s.app {
		err = errors.Join(err, a.Close())
	}
	s.app = nil
	rep := b.Report
	if err == nil && len(rep.Late) > 0 {
		// Slices written before one that encloses them came: nested
		// again, their depths and parents made right (see renest.go).
		var dropped int64
		dropped, err = db.renest(rep.Late)
		rep.Unsure, rep.TooDeep = 0, rep.TooDeep+dropped
	}
	return rep, err
}

// A sink hands the slices to a Pipe, whose goroutine inserts them (see
// slices.go), and appends the other rows through one Appender per table,
// in the order of rowTypes but the slices'.
type sink struct {
	app    []*duck.Appender
	slices *tables.Pipe[tables.Slice]
}

// null returns p's value, or nil for a NULL.
func null[T any](p *T) driver.Value {
	if p == nil {
		return nil
	}
	return *p
}

func (s *sink) Slice(r *tables.Slice) error { return s.slices.Add(r) }

func (s *sink) Counter(r *tables.Counter) error {
	return s.app[0].AppendRow(r.ID, r.TS, r.TrackID, r.Value, r.Name, r.Upid)
}

func (s *sink) Flow(r *tables.Flow) error {
	return s.app[1].AppendRow(r.ID, r.SliceOut, r.SliceIn, r.Name, r.Category)
}

func (s *sink) Track(r *tables.Track) error {
	return s.app[2].AppendRow(r.ID, r.Name, r.Type, null(r.Utid), null(r.Upid))
}

func (s *sink) Thread(r *tables.Thread) error {
	return s.app[3].AppendRow(r.Utid, r.Tid, r.Name, r.Upid)
}

func (s *sink) Process(r *tables.Process) error {
	return s.app[4].AppendRow(r.Upid, r.Pid, r.Name, r.File, null(r.TS0UnixNS), r.Offset)
}
