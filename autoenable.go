package tracer

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Tracing without changing the code: the environment variables below.
//
// When the environment variable TRACER_FILE is set at start-up, the default
// tracer starts by itself, before main runs, writing to that path, so the
// Span calls already in a program record without a Start in it:
//
//	TRACER_FILE=trace.json ./server
//	TRACER_FILE=trace.json.gz TRACER_FLUSH=50ms go run ./cmd/server
//
// These variables set the options:
//
//	TRACER_FILE          the path, as for Start (".gz" gzips); {pid} in it is the process id
//	TRACER_FLUSH         WithFlushInterval, a time.ParseDuration string ("50ms")
//	TRACER_BUFFER        WithBufferLimit, bytes
//	TRACER_LOSSLESS      WithLossless, if true ("1", "true")
//	TRACER_GZIP          WithGzip, a level from 1 to 9
//	TRACER_CATEGORIES    WithCategories, names separated by commas
//	TRACER_PROCESS_NAME  WithProcessName
//	TRACER_MAX_FILE_SIZE WithMaxFileSize, bytes
//	TRACER_MAX_FILES     WithMaxFiles
//	TRACER_LANES         WithLanes, if true ("1", "true")
//
// One more is read whenever a tracer starts, with or without TRACER_FILE:
//
//	TRACER_CLOCK         "nanotime": stamp events with the runtime's clock,
//	                     never the CPU's counter (see docs/internals.md)
//
// A variable that does not parse, or a file that cannot be created, is
// reported on standard error and tracing stays off: a trace is never a
// reason for the program not to run. Without TRACER_FILE the cost is one
// os.Getenv at start-up; the recording calls cost what they always do when
// tracing is off.
//
// How the file ends. The tracer started this way writes what was recorded
// every flush interval, and changes nothing else in the program: in
// particular it does not catch signals, because a program with its own
// handler would then get each signal twice (see StopOnSignal). Go runs no
// hook when main returns, os.Exit is called or a signal kills the
// program, so a program that ends any of these ways leaves its file
// unterminated, as after a kill: both viewers open it, and it holds every
// event recorded up to the last flush, so at most the last flush interval
// (100ms by default, TRACER_FLUSH to shorten it) is missing. For a
// complete, closed file, add one line at the top of main, which does
// nothing when tracing is off:
//
//	defer tracer.Stop()
//
// and, in a program that does not handle SIGINT and SIGTERM itself,
// tracer.StopOnSignal().
//
// A program that calls Start itself gets ErrStarted while TRACER_FILE is
// set, because the default tracer is already running: treat ErrStarted
// from Start as "already tracing".
const (
	EnvFile        = "TRACER_FILE"
	EnvFlush       = "TRACER_FLUSH"
	EnvBuffer      = "TRACER_BUFFER"
	EnvLossless    = "TRACER_LOSSLESS"
	EnvGzip        = "TRACER_GZIP"
	EnvCategories  = "TRACER_CATEGORIES"
	EnvProcessName = "TRACER_PROCESS_NAME"
	EnvMaxFileSize = "TRACER_MAX_FILE_SIZE"
	EnvMaxFiles    = "TRACER_MAX_FILES"
	EnvLanes       = "TRACER_LANES"
	EnvClock       = "TRACER_CLOCK"
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
	if !errors.Is(err, ErrFileInUse) {
		return err
	}
	beside := besidePath(path, pid)
	if err := Start(beside, opts...); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "tracer: %s is being written by another process; this one (pid %d) writes %s (put %s in %s for a file per process)\n",
		path, pid, beside, PidPlaceholder, EnvFile)
	return nil
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
