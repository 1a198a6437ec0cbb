package traceslog_test

import (
	"log/slog"
	"os"

	"github.com/gotracer/tracer/traceslog"
)

// Wrap the handler the program already logs with; the log output is as
// before, and with tracing on every record is also an instant on the
// timeline.
func ExampleNewHandler() {
	text := slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{} // a stable output for the example
			}
			return a
		},
	})
	logger := slog.New(traceslog.NewHandler(text, nil))
	logger.Info("cache miss", "key", "user:42")
	// Output: level=INFO msg="cache miss" key=user:42
}
