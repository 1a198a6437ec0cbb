package tracetest_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/gotracer/tracer"
	"github.com/gotracer/tracer/internal/tracecheck"
	"github.com/gotracer/tracer/tracetest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMain(m *testing.M) { tracetest.Main(m) }

const childEnv = "TRACETEST_CHILD"

func work() {
	defer tracer.Span("work")()
	time.Sleep(100 * time.Microsecond)
}

// TestChild and BenchmarkChild are what TestTraceOfTests runs in a child
// process, asking for a trace.
func TestChild(t *testing.T) {
	if os.Getenv(childEnv) == "" {
		t.Skip("helper process for TestTraceOfTests")
	}
	tracetest.Start(t)
	work()
	t.Run("sub", func(t *testing.T) {
		tracetest.Start(t)
		work()
	})
}

func BenchmarkChild(b *testing.B) {
	tracetest.Start(b)
	for range b.N {
		work()
	}
}

// TestTraceOfTests runs tests and a benchmark in a child process that asks
// for a trace with the flag or the environment variable, and checks the
// file: closed (Main), a span per test on a goroutine named after it,
// subtests on their own, and a span per benchmark batch.
func TestTraceOfTests(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		env     string
		batches bool
	}{
		{name: "flag", args: []string{"-test.run=^TestChild$"}},
		{name: "env", args: []string{"-test.run=^TestChild$"}, env: tracer.EnvFile},
		{name: "benchmark", args: []string{"-test.run=^$", "-test.bench=^BenchmarkChild$", "-test.benchtime=100x"}, batches: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "tests.json")
			cmd := exec.Command(os.Args[0], tc.args...)
			cmd.Env = append(os.Environ(), childEnv+"=1")
			if tc.env != "" {
				cmd.Env = append(cmd.Env, tc.env+"="+path)
			} else {
				cmd.Args = append(cmd.Args, "-tracer.out="+path)
			}
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "%s", out)

			evs := tracecheck.Read(t, path)
			data, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.Contains(t, string(data[len(data)-5:]), "]", "Main closes the file")
			tracks := tracecheck.Tracks(t, evs)
			names := map[uint64]string{}
			for _, e := range tracecheck.Named(evs, "thread_name") {
				names[e.Tid] = e.Args["name"].(string)
			}
			if tc.batches {
				batches := tracecheck.SlicesNamed(tracks, "BenchmarkChild")
				require.Len(t, batches, 2, "runs of 1 and 100 iterations")
				assert.Equal(t, []any{1.0, 100.0}, []any{batches[0].Args["N"], batches[1].Args["N"]})
				assert.Len(t, tracecheck.SlicesNamed(tracks, "work"), 101)
				return
			}
			for _, name := range []string{"TestChild", "TestChild/sub"} {
				spans := tracecheck.Named(evs, name) // X, or B and E
				require.NotEmpty(t, spans, name)
				assert.Equal(t, "test", spans[0].Cat)
				require.Len(t, tracecheck.SlicesNamed(tracks, name), 1, name)
				assert.Equal(t, name, names[spans[0].Tid], "the test's goroutine is named after it")
				var inside int
				for _, s := range tracks[spans[0].Tid] {
					if s.Name == "work" {
						inside++
					}
				}
				assert.Equal(t, 1, inside, "%s's work is on its track", name)
			}
			if tc.name == "flag" { // the others' files differ in no way the importers see
				tracecheck.ImportQuick(t, path)
			}
		})
	}
}

// TestStartWithoutTrace checks that Start does nothing when no trace was
// asked for.
func TestStartWithoutTrace(t *testing.T) {
	if tracer.Default() != nil {
		t.Skip("a trace was asked for")
	}
	tracetest.Start(t)
	assert.Nil(t, tracer.Default())
}
