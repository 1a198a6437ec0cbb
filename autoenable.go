package tracer

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"go.uber.org/atomic"
)

func init() {
	path := os.Getenv(EnvFile)
	if path == "" {
		return
	}
	if err := startFromEnv(path, os.Getenv); err != nil {
		fmt.Fprintf(os.Stderr, "tracer: %s=%s: %v (tracing is off)\n", EnvFile, path, err)
	}
}

// PidPlaceholder in TRACER_FILE is replaced by the process id, so that
// every process that inherits the variable writes a file of its own:
//
//	TRACER_FILE='trace-{pid}.json' go test ./...   # one file per test binary
//	tracer merge -o all.json trace-*.json
const PidPlaceholder = "{pid}"

// startFromEnv starts the default tracer writing to path with the options
// the environment (read through getenv) sets. A path another process
// writes (a parent that started this one with the same environment) is
// left alone: this process writes beside it, with its pid in the name
// (see besidePath), and says so on standard error.
func startFromEnv(path string, getenv func(string) string) error {
	opts, err := envOptions(getenv)
	if err != nil {
		return err
	}
	pid := os.Getpid()
	path = strings.ReplaceAll(path, PidPlaceholder, strconv.Itoa(pid))
	err = Start(path, opts...)
	if errors.Is(err, ErrFileInUse) {
		beside := besidePath(path, pid)
		if err = Start(beside, opts...); err == nil {
			fmt.Fprintf(os.Stderr, "tracer: %s is being written by another process; this one (pid %d) writes %s (put %s in %s for a file per process)\n",
				path, pid, beside, PidPlaceholder, EnvFile)
		}
		path = beside
	}
	if err != nil {
		return err
	}
	fromEnv.Store(&envTracer{t: loadStd(), path: path})
	return nil
}

// envTracer is the default tracer TRACER_FILE started, and its file.
type envTracer struct {
	t    *Tracer
	path string
	told atomic.Bool // that a Start left it running: see startedFromEnv
}

// fromEnv is the default tracer TRACER_FILE started, if any: Start leaves
// it running rather than fail (see Start).
var fromEnv atomic.Pointer[envTracer]

// startedFromEnv reports whether t is the default tracer TRACER_FILE
// started, and says once on standard error that a Start for path leaves
// it so.
func startedFromEnv(t *Tracer, path string) bool {
	e := fromEnv.Load()
	if e == nil || e.t != t {
		return false
	}
	if e.told.CompareAndSwap(false, true) {
		fmt.Fprintf(os.Stderr, "tracer: %s=%s is set: the trace goes there, and Start(%q) leaves it so\n", EnvFile, e.path, path)
	}
	return true
}

// besidePath returns the name of a trace beside path for process pid:
// trace.json becomes trace.pid123.json, trace.json.gz trace.pid123.json.gz.
// The "pid" keeps it apart from rotated files, which are numbered.
func besidePath(path string, pid int) string {
	dir, name := filepath.Split(path)
	base, ext := name, ""
	if i := strings.IndexByte(name[min(1, len(name)):], '.'); i >= 0 {
		base, ext = name[:i+1], name[i+1:]
	}
	return filepath.Join(dir, base+".pid"+strconv.Itoa(pid)+ext)
}

// envOptions returns the options the TRACER_* variables other than
// TRACER_FILE set.
func envOptions(getenv func(string) string) ([]Option, error) {
	var opts []Option
	integer := func(name string, bits int, opt func(int64) Option) error {
		s := getenv(name)
		if s == "" {
			return nil
		}
		n, err := strconv.ParseInt(s, 10, bits)
		if err != nil {
			return fmt.Errorf("%s=%s: not an integer", name, s)
		}
		opts = append(opts, opt(n))
		return nil
	}
	if s := getenv(EnvFlush); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			return nil, fmt.Errorf("%s=%s: %v", EnvFlush, s, err)
		}
		opts = append(opts, WithFlushInterval(d))
	}
	for _, err := range []error{
		integer(EnvBuffer, 64, func(n int64) Option { return WithBufferLimit(int(n)) }),
		integer(EnvGzip, 32, func(n int64) Option { return WithGzip(int(n)) }),
		integer(EnvMaxFileSize, 64, WithMaxFileSize),
		integer(EnvMaxFiles, 32, func(n int64) Option { return WithMaxFiles(int(n)) }),
	} {
		if err != nil {
			return nil, err
		}
	}
	if s := getenv(EnvLossless); s != "" {
		lossless, err := strconv.ParseBool(s)
		if err != nil {
			return nil, fmt.Errorf("%s=%s: not a boolean", EnvLossless, s)
		}
		if lossless {
			opts = append(opts, WithLossless())
		}
	}
	if s := getenv(EnvLanes); s != "" {
		lanes, err := strconv.ParseBool(s)
		if err != nil {
			return nil, fmt.Errorf("%s=%s: not a boolean", EnvLanes, s)
		}
		if lanes {
			opts = append(opts, WithLanes())
		}
	}
	if s := getenv(EnvCategories); s != "" {
		opts = append(opts, WithCategories(strings.Split(s, ",")...))
	}
	if s := getenv(EnvProcessName); s != "" {
		opts = append(opts, WithProcessName(s))
	}
	return opts, nil
}
