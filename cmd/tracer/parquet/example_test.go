package parquet_test

import (
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/gotracer/tracer/cmd/tracer/parquet"
)

// Export writes a directory per table, one Parquet file per process for
// the large ones.
func ExampleExport() {
	dir, err := os.MkdirTemp("", "trace")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "trace.json")
	trace := `[
{"ph":"M","name":"process_name","pid":1,"tid":1,"args":{"name":"server"}},
{"ph":"X","name":"request","pid":1,"tid":1,"ts":0,"dur":100},
{"ph":"C","name":"queue","pid":1,"tid":1,"ts":5,"args":{"depth":3}}
]`
	if err := os.WriteFile(path, []byte(trace), 0o644); err != nil {
		log.Fatal(err)
	}

	out := filepath.Join(dir, "tables")
	rep, err := parquet.Export(out, []string{path}, 0)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(rep.Events, "events,", rep.Slices, "slice")
	files, _ := filepath.Glob(filepath.Join(out, "*", "*.parquet"))
	for _, f := range files {
		rel, _ := filepath.Rel(out, f)
		fmt.Println(rel)
	}
	// Output:
	// 3 events, 1 slice
	// counter/part-00000.parquet
	// flow/part-00000.parquet
	// process/part-00000.parquet
	// slice/part-00000.parquet
	// thread/part-00000.parquet
	// track/part-00000.parquet
}
