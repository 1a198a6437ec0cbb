package tracehttp

import (
	"io"
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

// TestFlowTable checks that a server ends a flow only for the parent id
// of a request this process sent and did not see served yet, once.
func TestFlowTable(t *testing.T) {
	tr, err := tracer.NewWithWriter(io.Discard)
	require.NoError(t, err)
	defer tr.Close()
	ft := &flowTable{}
	f := tr.FlowBegin("http")
	require.True(t, ft.issue(7, f))
	assert.False(t, ft.issue(7, tr.FlowBegin("http")), "a second request with the same traceparent gets no flow")
	_, ok := ft.take(8)
	assert.False(t, ok, "a parent id this process did not send")
	got, ok := ft.take(7)
	require.True(t, ok)
	assert.Equal(t, f.ID(), got.ID())
	_, ok = ft.take(7)
	assert.False(t, ok, "taken once")
	require.True(t, ft.issue(9, f))
	ft.forget(9)
	_, ok = ft.take(9)
	assert.False(t, ok, "forgotten after the round trip")
}
