package tracefile

import (
	"path/filepath"
	"testing"

	"github.com/gotracer/tracer"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCountBytes(t *testing.T) {
	data := `[
{"name":"process_name","ph":"M","pid":1,"tid":0,"args":{"name":"p"}},
{"name":"x","ph":"X","ts":1,"dur":2,"pid":1,"tid":5},
{"name":"x","ph":"B","ts":3,"pid":1,"tid":5},
{"name":"y","ph":"X","ts":3,"dur":1,"pid":1,"tid":5},
{"name":"x","ph":"E","ts":4,"pid":1,"tid":5},
{"name":"x","ph":"E","ts":5,"pid":1,"tid":6},
{"name":"x","ph":"B","ts":6,"pid":1,"tid":7}
]`
	c, err := CountBytes([]byte(data), "x")
	require.NoError(t, err)
	assert.Equal(t, Counts{Spans: 2, Begins: 1, Unpaired: 1, Events: 7}, c)
}

func TestRepair(t *testing.T) {
	closed := "[\n{\"name\":\"x\",\"ph\":\"X\"}\n]\n"
	assert.Equal(t, closed, string(Repair([]byte(closed))))
	assert.Equal(t, "[\n{\"name\":\"x\",\"ph\":\"X\"}\n]\n", string(Repair([]byte("[\n{\"name\":\"x\",\"ph\":\"X\"},\n"))))
	assert.Equal(t, "[\n{\"name\":\"x\",\"ph\":\"X\"}\n]\n", string(Repair([]byte("[\n{\"name\":\"x\",\"ph\":\"X\"},\n{\"name\":\"x\",\"p"))))
}

func TestCountTracerFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.json")
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
}
