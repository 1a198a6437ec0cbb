package spancount

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gotracer/tracer"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCount(t *testing.T) {
	const events = `[
{"name":"process_name","ph":"M","pid":1,"tid":0,"args":{"name":"p"}},
{"name":"x","ph":"X","ts":1,"dur":2,"pid":1,"tid":5},
{"name":"x","ph":"B","ts":3,"pid":1,"tid":5},
{"name":"y","ph":"X","ts":3,"dur":1,"pid":1,"tid":5},
{"name":"x","ph":"E","ts":4,"pid":1,"tid":5},
{"name":"x","ph":"E","ts":5,"pid":1,"tid":6},
{"name":"\u0078","ph":"B","ts":6,"pid":1,"tid":7}`
	want := Counts{Spans: 2, Begins: 1, Unpaired: 1, Events: 7}
	for _, tc := range []struct {
		name, text string
		want       Counts
		err        string
	}{
		{"closed", events + "\n]\n", want, ""},
		{"cut by a crash", events + ",\n", want, ""},
		{"torn last line", events + ",\n{\"name\":\"x\",\"ph\":\"X\",\"ts", want, ""},
		{"invalid JSON", events + ",\n{\"name\":x},\n", want, "invalid JSON"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "t.json")
			require.NoError(t, os.WriteFile(path, []byte(tc.text), 0o644))
			c, err := Count(path, "x")
			assert.Equal(t, tc.want, c)
			if tc.err == "" {
				require.NoError(t, err)
			} else {
				require.Error(t, err)
				assert.True(t, strings.Contains(err.Error(), tc.err), err.Error())
			}
		})
	}
}

func TestCountTracerFile(t *testing.T) {
	for _, name := range []string{"t.json", "t.json.gz"} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), name)
			tr, err := tracer.New(path)
			require.NoError(t, err)
			for range 3000 {
				func() { defer tr.Span("x")() }()
			}
			require.NoError(t, tr.Close())
			c, err := Count(path, "x")
			require.NoError(t, err)
			assert.Equal(t, 3000, c.Spans)
			assert.Zero(t, c.Begins)
			assert.Zero(t, c.Unpaired)
		})
	}
}
