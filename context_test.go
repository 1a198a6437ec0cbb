package tracer

import (
	"context"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestContextCarriesAsyncAndFlow records a flow and an async operation that
// reach child goroutines only through a context, and checks that the file
// links them: the flow's s and f share an id and bind inside spans of two
// goroutines, and the operation's events pair up under one id.
func TestContextCarriesAsyncAndFlow(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ctx.json")
	tr, err := New(path)
	require.NoError(t, err)
	cat := Category("ctx")

	ctx := context.Background()
	endParent := tr.Span("parent")
	op := tr.AsyncBegin("request", cat)
	ctx = ContextWithAsync(ctx, op)
	ctx = ContextWithFlow(ctx, tr.FlowBegin("handoff", cat))
	endParent()

	var wg sync.WaitGroup
	wg.Go(func() {
		defer tr.Span("child")()
		FlowFromContext(ctx).End()
		step := AsyncFromContext(ctx).Begin("step")
		step.End()
		AsyncFromContext(ctx).End()
	})
	wg.Wait()
	require.NoError(t, tr.Close())

	evs := readClosed(t, path)
	checkTracks(t, evs)
	s, f := byPhase(evs, "s"), byPhase(evs, "f")
	require.Len(t, s, 1)
	require.Len(t, f, 1)
	assert.Equal(t, s[0].ID, f[0].ID)
	assert.Equal(t, "e", f[0].Bp)
	parent, child := byName(evs, "parent")[0], byName(evs, "child")[0]
	assert.Equal(t, parent.Tid, s[0].Tid)
	assert.Equal(t, child.Tid, f[0].Tid)
	assert.NotEqual(t, parent.Tid, child.Tid)

	b, e := byPhase(evs, "b"), byPhase(evs, "e")
	require.Len(t, b, 2) // request and step
	require.Len(t, e, 2)
	for _, ev := range append(b, e...) {
		assert.Equal(t, b[0].ID2, ev.ID2, "one operation, one id")
		assert.Equal(t, "ctx", ev.Cat)
	}
}

// TestContextOffAllocatesNothing checks the promise that storing what
// tracing off returns leaves the context as it is.
func TestContextOffAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	ctx := context.Background()
	var nilTracer *Tracer
	allocs := testing.AllocsPerRun(100, func() {
		c := ContextWithAsync(ctx, nilTracer.AsyncBegin("x"))
		c = ContextWithFlow(c, nilTracer.FlowBegin("x"))
		AsyncFromContext(c).End()
		FlowFromContext(c).End()
		if c != ctx {
			t.Fatal("context changed")
		}
	})
	assert.Zero(t, allocs)
}
