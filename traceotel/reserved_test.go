package traceotel_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gotracer/tracer"
	"github.com/gotracer/tracer/internal/tracecheck"
	"github.com/gotracer/tracer/traceotel"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// TestReservedAttributeNames gives a span an attribute named after each
// arg the processor writes itself, and one named as the renamed first
// would be: every key of the slice's args is written once, the span's own
// status and ids win, and each attribute is kept under a name of its own.
func TestReservedAttributeNames(t *testing.T) {
	path := filepath.Join(t.TempDir(), "otel.json")
	// A long flush interval keeps the span one X event, however long a
	// loaded machine makes it last.
	tr, err := tracer.New(path, tracer.WithFlushInterval(10*time.Second))
	require.NoError(t, err)
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(traceotel.NewSpanProcessor(traceotel.WithTracer(tr))))
	reserved := []string{"kind", "trace_id", "span_id", "parent_span_id", "status", "status_description"}
	attrs := []attribute.KeyValue{attribute.String("attr.status", "taken")}
	for _, k := range reserved {
		attrs = append(attrs, attribute.String(k, "from the attribute"))
	}
	_, s := tp.Tracer("test").Start(context.Background(), "op")
	s.SetAttributes(attrs...)
	s.SetStatus(codes.Error, "real description")
	s.End()
	require.NoError(t, tp.Shutdown(context.Background()))
	require.NoError(t, tr.Close())

	data, err := os.ReadFile(path)
	require.NoError(t, err)
	for _, line := range bytes.Split(data, []byte("\n")) {
		line = bytes.TrimRight(bytes.TrimSpace(line), ",")
		if bytes.HasPrefix(line, []byte(`{"name":"op"`)) {
			assertUniqueKeys(t, line)
		}
	}
	// Started and ended on one goroutine, the span is one X event holding
	// the start's and the end's args.
	ops := tracecheck.Named(tracecheck.Read(t, path), "op")
	require.Len(t, ops, 1)
	require.Equal(t, "X", ops[0].Ph)
	args := ops[0].Args
	assert.Equal(t, "Error", args["status"])
	assert.Equal(t, "real description", args["status_description"])
	assert.Equal(t, "internal", args["kind"])
	assert.Equal(t, "taken", args["attr.status"])
	assert.Equal(t, "from the attribute", args["attr.attr.status"])
	for _, k := range reserved[1:] {
		if k != "status" {
			assert.Equal(t, "from the attribute", args["attr."+k], k)
		}
	}
}

// assertUniqueKeys fails if any object in the JSON text holds a key twice,
// which encoding/json would silently collapse.
func assertUniqueKeys(t *testing.T, text []byte) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(text))
	type frame struct {
		object bool
		keys   map[string]bool
		key    bool // the next string token is a key
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err != nil {
			break
		}
		top := (*frame)(nil)
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '{':
				stack = append(stack, &frame{object: true, keys: map[string]bool{}, key: true})
				continue
			case '[':
				stack = append(stack, &frame{})
				continue
			default:
				stack = stack[:len(stack)-1]
			}
		case string:
			if top != nil && top.object && top.key {
				assert.False(t, top.keys[v], "key %q twice in %s", v, text)
				top.keys[v] = true
				top.key = false
				continue
			}
		}
		if len(stack) > 0 && stack[len(stack)-1].object {
			stack[len(stack)-1].key = true
		}
	}
}
