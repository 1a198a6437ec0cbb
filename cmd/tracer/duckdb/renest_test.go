package duckdb

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gotracer/tracer/internal/tracecheck"
)

// TestRenestMatchesTraceProcessor loads files whose slices are written
// before a slice that encloses them comes, far past MaxPending (here
// 64), and checks that the slice table is trace_processor's all the
// same, every slice with its depth and parent: the tracks are nested
// again once the rows are in (renest.go).
func TestRenestMatchesTraceProcessor(t *testing.T) {
	t.Parallel()
	x := func(b *strings.Builder, name string, ts, dur int) {
		fmt.Fprintf(b, `{"name":%q,"ph":"X","ts":%d,"dur":%d,"pid":1,"tid":1},`+"\n", name, ts, dur)
	}
	be := func(b *strings.Builder, ph, name string, ts int) {
		fmt.Fprintf(b, `{"name":%q,"ph":%q,"ts":%d,"pid":1,"tid":1},`+"\n", name, ph, ts)
	}
	files := map[string]func(b *strings.Builder){
		// A program's main span, whose B the tracer package writes at
		// its first flush, after the spans recorded before it, each
		// with a child.
		"late B": func(b *strings.Builder) {
			for i := range 3000 {
				x(b, "leaf", 10+4*i+1, 1)
				x(b, "request", 10+4*i, 3)
			}
			be(b, "B", "main", 0)
			be(b, "E", "main", 20+4*3000)
		},
		// The same main span never ended (the program was killed).
		"open B": func(b *strings.Builder) {
			be(b, "B", "main", 0)
			for i := range 3000 {
				x(b, "request", 10+4*i, 3)
			}
		},
		// B/E pairs in start order, then X events in no order that
		// enclose them, one inside another.
		"X after B and E": func(b *strings.Builder) {
			for i := range 1000 {
				be(b, "B", "step", 100+10*i)
				be(b, "E", "step", 100+10*i+5)
			}
			x(b, "phase", 50, 6000)
			x(b, "run", 0, 20000)
			x(b, "half", 2000, 3000)
		},
		// A chain 512 levels deep in start order, then a span around
		// it: the innermost slice is now deeper than trace_processor
		// keeps, and is dropped, as it drops it.
		"too deep": func(b *strings.Builder) {
			for i := range 512 {
				x(b, "r", 10+i, 2*(600-i))
			}
			for i := range 200 {
				x(b, "after", 2000+2*i, 1)
			}
			x(b, "around", 0, 5000)
		},
	}
	dir := t.TempDir()
	for name, write := range files {
		t.Run(name, func(t *testing.T) {
			var b strings.Builder
			b.WriteString("[\n")
			write(&b)
			path := filepath.Join(dir, strings.ReplaceAll(name, " ", "_")+".json")
			require.NoError(t, os.WriteFile(path, []byte(strings.TrimSuffix(b.String(), ",\n")+"\n]\n"), 0o644))

			db, err := Open()
			require.NoError(t, err)
			defer db.Close()
			db.MaxPending = 64
			rep, err := db.Load([]string{path})
			require.NoError(t, err)
			assert.NotEmpty(t, rep.Late, "the premise: slices written before the one that encloses them")
			assert.Zero(t, rep.Unsure, "nested again: none short")
			if name == "too deep" {
				assert.Equal(t, int64(1), rep.TooDeep)
			} else {
				assert.Empty(t, rep.Warnings())
			}
			var out bytes.Buffer
			require.NoError(t, db.Query(&out, slicesQuery, FormatCSV))
			got, err := csv.NewReader(&out).ReadAll()
			require.NoError(t, err)
			want := tracecheck.PerfettoSQL(t, path, slicesQuery)
			require.Greater(t, len(want), 1)
			require.Equal(t, want, got)
		})
	}
}
