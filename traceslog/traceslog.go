// Package traceslog puts log records on the trace timeline: a slog.Handler
// that records each record as an instant event on the calling goroutine's
// track, next to the spans around it, and passes the record on unchanged
// to the handler it wraps.
//
// # Quick start
//
// Wrap the handler the program already uses:
//
//	logger := slog.New(traceslog.NewHandler(slog.NewTextHandler(os.Stderr, nil), nil))
//	slog.SetDefault(logger)
//
// Each record becomes an instant ("i", scope "t") named by its message,
// with the record's attributes as args (groups flattened to "group.key")
// and its level as the category ("INFO", "WARN", ...), so the viewers can
// filter logs by level. In Perfetto, select the instant to see its args.
//
// # Cost
//
// Enabled is the wrapped handler's, so a disabled level costs what it did
// before. With tracing off, Handle costs one atomic load more than the
// wrapped handler and allocates nothing more. With tracing on, a record
// costs about one Instant call (a few tens of nanoseconds); attributes of
// kinds other than string, numbers and bool (times, durations, any) are
// formatted as strings, which allocates.
package traceslog

import (
	"context"
	"log/slog"
	"time"

	"github.com/gotracer/tracer"
)

// maxArgs is the most args an event holds; the tracer cuts the rest.
const maxArgs = 32

// HandlerOptions configures a Handler. A nil *HandlerOptions means the
// zero value.
type HandlerOptions struct {
	// Tracer is the tracer records go to; nil means the default tracer
	// (tracer.Start, or TRACER_FILE), whichever is running when a record
	// is handled.
	Tracer *tracer.Tracer
}

// A Handler records every record it handles as an instant event, then
// passes the record to the handler it wraps. It is safe for concurrent
// use, as its wrapped handler must be.
type Handler struct {
	next   slog.Handler
	tr     *tracer.Tracer
	prefix string       // the open groups, "a.b.", qualifying later keys
	attrs  []tracer.Arg // from WithAttrs, converted once
}

// NewHandler returns a Handler wrapping next.
func NewHandler(next slog.Handler, opts *HandlerOptions) *Handler {
	h := &Handler{next: next}
	if opts != nil {
		h.tr = opts.Tracer
	}
	return h
}

// Enabled reports whether the wrapped handler handles records at level:
// the trace gets exactly the records the log does.
func (h *Handler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.next.Enabled(ctx, level)
}

// Handle records r as an instant on the calling goroutine's track and
// passes it to the wrapped handler.
func (h *Handler) Handle(ctx context.Context, r slog.Record) error {
	t := h.tr
	if t == nil {
		t = tracer.Default()
	}
	if t != nil {
		h.record(t, &r)
	}
	return h.next.Handle(ctx, r)
}

// record is apart from Handle so that tracing off does not pay for its
// argument buffer.
func (h *Handler) record(t *tracer.Tracer, r *slog.Record) {
	var buf [maxArgs]tracer.Arg
	args := append(buf[:0], levelCategory(r.Level))
	args = append(args, h.attrs[:min(len(h.attrs), maxArgs-1)]...)
	r.Attrs(func(a slog.Attr) bool {
		args = appendAttr(args, h.prefix, a)
		return len(args) < maxArgs
	})
	t.Instant(r.Message, args...)
}

// WithAttrs returns a Handler whose records carry attrs, in the trace and
// in the wrapped handler's output.
func (h *Handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	if len(attrs) == 0 {
		return h
	}
	h2 := *h
	h2.next = h.next.WithAttrs(attrs)
	h2.attrs = append([]tracer.Arg(nil), h.attrs...)
	for _, a := range attrs {
		h2.attrs = appendAttr(h2.attrs, h.prefix, a)
	}
	return &h2
}

// WithGroup returns a Handler that qualifies later attributes with name:
// "name.key" in the trace.
func (h *Handler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	h2 := *h
	h2.next = h.next.WithGroup(name)
	h2.prefix = h.prefix + name + "."
	return &h2
}

// The categories of the standard levels, registered once.
var (
	catDebug = tracer.Category(slog.LevelDebug.String())
	catInfo  = tracer.Category(slog.LevelInfo.String())
	catWarn  = tracer.Category(slog.LevelWarn.String())
	catError = tracer.Category(slog.LevelError.String())
)

// levelCategory returns the category of level: its name, as slog writes
// it ("INFO", "WARN+2").
func levelCategory(level slog.Level) tracer.Arg {
	switch level {
	case slog.LevelDebug:
		return catDebug
	case slog.LevelInfo:
		return catInfo
	case slog.LevelWarn:
		return catWarn
	case slog.LevelError:
		return catError
	}
	return tracer.Category(level.String())
}

// appendAttr appends a as args, its key qualified by prefix, and the
// members of a group as "group.key", as slog's own handlers flatten them.
func appendAttr(args []tracer.Arg, prefix string, a slog.Attr) []tracer.Arg {
	a.Value = a.Value.Resolve()
	if a.Equal(slog.Attr{}) {
		return args // slog's rule: an empty attribute is ignored
	}
	key := a.Key
	if prefix != "" {
		key = prefix + key
	}
	v := a.Value
	switch v.Kind() {
	case slog.KindGroup:
		if a.Key != "" {
			prefix = key + "."
		}
		for _, m := range v.Group() {
			if len(args) == maxArgs {
				break
			}
			args = appendAttr(args, prefix, m)
		}
		return args
	case slog.KindString:
		return append(args, tracer.String(key, v.String()))
	case slog.KindInt64:
		return append(args, tracer.Int64(key, v.Int64()))
	case slog.KindUint64:
		return append(args, tracer.Uint64(key, v.Uint64()))
	case slog.KindFloat64:
		return append(args, tracer.Float64(key, v.Float64()))
	case slog.KindBool:
		return append(args, tracer.Bool(key, v.Bool()))
	case slog.KindTime:
		return append(args, tracer.String(key, v.Time().Format(time.RFC3339Nano)))
	default: // durations, any: as slog's text handler writes them
		return append(args, tracer.String(key, v.String()))
	}
}
