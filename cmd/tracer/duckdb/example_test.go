package duckdb_test

import (
	"log"
	"os"
	"path/filepath"

	"github.com/gotracer/tracer/cmd/tracer/duckdb"
)

// The slices of a trace, by name, with their depth: the SQL runs over
// tables named and shaped like trace_processor's.
func ExampleDB_Query() {
	dir, err := os.MkdirTemp("", "trace")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "trace.json")
	trace := `[
{"ph":"X","name":"decode","pid":1,"tid":1,"ts":10,"dur":20},
{"ph":"X","name":"request","pid":1,"tid":1,"ts":0,"dur":100},
{"ph":"X","name":"request","pid":1,"tid":1,"ts":200,"dur":50}
]`
	if err := os.WriteFile(path, []byte(trace), 0o644); err != nil {
		log.Fatal(err)
	}

	db, err := duckdb.Open()
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Load([]string{path}); err != nil {
		log.Fatal(err)
	}
	err = db.Query(os.Stdout, `SELECT name, count(*) AS n, sum(dur) AS total_ns, max(depth) AS depth
FROM slice GROUP BY name ORDER BY name`, duckdb.FormatTable)
	if err != nil {
		log.Fatal(err)
	}
	// Output:
	// name     n  total_ns  depth
	// decode   1  20000     1
	// request  2  150000    0
}
