package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestNormalised checks that what differs from run to run is masked and
// nothing else: two runs' lines become equal, a changed name or field
// does not.
func TestNormalised(t *testing.T) {
	for _, c := range []struct {
		name   string
		a, b   string
		same   bool
		sorted bool
	}{
		{"times and ids", `{"name":"x","ph":"X","ts":12.345,"dur":0.100,"pid":7,"tid":18},`,
			`{"name":"x","ph":"X","ts":99.001,"dur":3.000,"pid":8,"tid":22},`, true, false},
		{"anchors", `{"name":"process_name","ph":"M","pid":1,"tid":1,"args":{"name":"p","ts0_wall":"2026-01-01T00:00:00Z","ts0_unix_ns":1,"ts0_mono_ns":2}},`,
			`{"name":"process_name","ph":"M","pid":2,"tid":2,"args":{"name":"p","ts0_wall":"2026-02-02T00:00:00Z","ts0_unix_ns":3,"ts0_mono_ns":4}},`, true, false},
		{"async and flow ids", `{"name":"op","cat":"io","ph":"b","ts":1.000,"pid":1,"tid":1,"id2":{"local":"0x1f"}},` + "\n" + `{"name":"f","ph":"s","ts":1.000,"pid":1,"tid":1,"id":12},`,
			`{"name":"op","cat":"io","ph":"b","ts":2.000,"pid":1,"tid":3,"id2":{"local":"0x2a"}},` + "\n" + `{"name":"f","ph":"s","ts":2.000,"pid":1,"tid":3,"id":40},`, true, false},
		{"padding lines", "{\"name\":\"a\"},\n\n\n{\"name\":\"b\"},", "{\"name\":\"a\"},\n{\"name\":\"b\"},", true, false},
		{"goroutine names", `{"name":"thread_name","ph":"M","pid":1,"tid":5,"args":{"name":"goroutine 5"}},`,
			`{"name":"thread_name","ph":"M","pid":1,"tid":9,"args":{"name":"goroutine 9"}},`, true, false},
		{"a name", `{"name":"x","ph":"X","ts":1.000,"dur":1.000,"pid":1,"tid":1},`, `{"name":"y","ph":"X","ts":1.000,"dur":1.000,"pid":1,"tid":1},`, false, false},
		{"an arg", `{"name":"x","ph":"i","ts":1.000,"pid":1,"tid":1,"args":{"n":1}},`, `{"name":"x","ph":"i","ts":1.000,"pid":1,"tid":1,"args":{"n":2}},`, false, false},
		{"a phase", `{"name":"x","ph":"B","ts":1.000,"pid":1,"tid":1},`, `{"name":"x","ph":"X","ts":1.000,"pid":1,"tid":1},`, false, false},
		{"order", "{\"name\":\"a\"},\n{\"name\":\"b\"},", "{\"name\":\"b\"},\n{\"name\":\"a\"},", false, false},
		{"order in a set", "{\"name\":\"a\"},\n{\"name\":\"b\"},", "{\"name\":\"b\"},\n{\"name\":\"a\"},\n{\"name\":\"a\"},", true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			read := func(s string) []string {
				dir := t.TempDir()
				require.NoError(t, os.WriteFile(filepath.Join(dir, "t.json"), []byte(s), 0o644))
				lines, err := normalised(dir, c.sorted)
				require.NoError(t, err)
				return lines
			}
			d := firstDifference(read(c.a), read(c.b))
			if c.same {
				assert.Empty(t, d)
			} else {
				assert.NotEmpty(t, d)
			}
		})
	}
}
