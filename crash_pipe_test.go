package tracer

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"testing"
	"time"

	"github.com/gotracer/tracer/internal/childtest"
	"github.com/stretchr/testify/require"
)

const pipeChildEnv = "TRACER_PIPE_CHILD"

// TestPipeChild is the process TestPipeCrash kills: it traces to its
// standard output, a pipe, as fast as it can, in big batches.
func TestPipeChild(t *testing.T) {
	mode := os.Getenv(pipeChildEnv)
	if mode == "" {
		t.Skip("helper process for TestPipeCrash")
	}
	var opts []Option
	if mode == "gzip" {
		opts = append(opts, WithGzip(1))
	}
	tr, err := New("/dev/stdout", opts...)
	require.NoError(t, err)
	for i := 0; ; i++ {
		tr.Span("job", Int("i", i), String("pad", "a string long enough to make events of a hundred bytes or more"))()
		if i%20000 == 0 {
			tr.Flush()
		}
	}
}

// TestPipeCrash is issue 10 item 13: a process tracing to a pipe whose
// reader is slower, killed by SIGKILL, must leave the stream on an event
// boundary (a whole gzip member), as it does a file: chrome://tracing
// refuses a trace that ends inside an event. Writes of at most PIPE_BUF
// bytes are atomic on a pipe, and the tracer writes to one in such pieces.
func TestPipeCrash(t *testing.T) {
	t.Parallel() // its own tracers, child processes or importers: it mostly waits
	for _, mode := range []string{"json", "gzip"} {
		for run := range 3 {
			t.Run(fmt.Sprintf("%s/%d", mode, run), func(t *testing.T) {
				cmd := childtest.Command("TestPipeChild", pipeChildEnv+"="+mode)
				out, err := cmd.StdoutPipe()
				require.NoError(t, err)
				require.NoError(t, cmd.Start())
				// Read slowly, so that the child waits in write(2) with the
				// pipe full, and kill it there.
				var data bytes.Buffer
				buf := make([]byte, 1000+run*777)
				for data.Len() < 256<<10 {
					n, err := out.Read(buf)
					data.Write(buf[:n])
					require.NoError(t, err)
					time.Sleep(50 * time.Microsecond)
				}
				require.NoError(t, cmd.Process.Kill())
				rest, err := io.ReadAll(out)
				require.NoError(t, err)
				data.Write(rest)
				_ = cmd.Wait()

				raw := data.Bytes()
				if mode == "gzip" {
					raw = bytes.Join(gunzipMembers(t, raw), nil) // fails on a cut member
				}
				require.True(t, bytes.HasSuffix(raw, []byte("},\n")), "the stream ends on an event boundary: %q", raw[max(0, len(raw)-80):])
				evs := readCrashed(t, raw)
				require.Greater(t, len(evs), 250)
			})
		}
	}
}
