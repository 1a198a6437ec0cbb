package tracer

import "context"

// Carrying an Async or a Flow through a context.Context, so that code on
// another goroutine, or deeper in the call chain, links its work to the
// operation that started it without an extra parameter:
//
//	ctx = tracer.ContextWithFlow(ctx, tracer.FlowBegin("job"))
//	go func() {
//		defer tracer.Span("job")()
//		tracer.FlowFromContext(ctx).End() // the arrow from the parent's span
//	}()
//
// Storing a zero Async or Flow, which is what tracing off gives, returns
// the context unchanged, so these helpers allocate nothing when tracing is
// off; reading one that was never stored returns the zero value, which
// records nothing.

type asyncKey struct{}

type flowKey struct{}

// ContextWithAsync returns a copy of ctx carrying a, or ctx itself if a is
// the zero Async.
func ContextWithAsync(ctx context.Context, a Async) context.Context {
	if a.t == nil {
		return ctx
	}
	return context.WithValue(ctx, asyncKey{}, a)
}

// AsyncFromContext returns the Async ctx carries, or the zero Async, whose
// methods record nothing.
func AsyncFromContext(ctx context.Context) Async {
	a, _ := ctx.Value(asyncKey{}).(Async)
	return a
}

// ContextWithFlow returns a copy of ctx carrying f, or ctx itself if f is
// the zero Flow.
func ContextWithFlow(ctx context.Context, f Flow) context.Context {
	if f.t == nil {
		return ctx
	}
	return context.WithValue(ctx, flowKey{}, f)
}

// FlowFromContext returns the Flow ctx carries, or the zero Flow, whose
// methods record nothing.
func FlowFromContext(ctx context.Context) Flow {
	f, _ := ctx.Value(flowKey{}).(Flow)
	return f
}
