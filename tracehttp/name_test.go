package tracehttp

import (
	"io"
	"strconv"
	"testing"

	"github.com/gotracer/tracer"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSpanName(t *testing.T) {
	tests := []struct{ method, pattern, want string }{
		{"GET", "", "HTTP GET"},
		{"GET", "GET /items/{id}", "GET /items/{id}"},
		{"HEAD", "GET /items/{id}", "GET /items/{id}"}, // GET patterns serve HEAD too
		{"POST", "/items/", "POST /items/"},
		{"GET", "example.com/", "GET example.com/"},
		{"DELETE", "DELETE example.com/a b", "DELETE example.com/a b"},
		{"GET", "/a b/", "GET /a b/"}, // a space in the path is not after a method
	}
	for _, tc := range tests {
		t.Run(tc.pattern, func(t *testing.T) {
			assert.Equal(t, tc.want, spanName(tc.method, tc.pattern))
		})
	}
}

// TestFlowHeaders checks that a header ends a flow only if it names, in
// this process's form, a flow this process issued and did not end yet.
func TestFlowHeaders(t *testing.T) {
	tr, err := tracer.NewWithWriter(io.Discard)
	require.NoError(t, err)
	defer tr.Close()
	ft, other := newFlowTable(), newFlowTable()
	require.NotEqual(t, ft.nonce, other.nonce)
	f := tr.FlowBegin("http")
	v := ft.issue(f)
	id := strconv.FormatUint(f.ID(), 36)
	for _, bad := range []string{"", "-", id, "-" + id, other.nonce + "-" + id, ft.nonce + "-zz!", ft.nonce + "-" + id + "0"} {
		ft.end(bad)
		_, open := ft.open.Load(f.ID())
		require.True(t, open, "%q must not end the flow", bad)
	}
	ft.end(v)
	_, open := ft.open.Load(f.ID())
	assert.False(t, open, "its own header ends it")
}
