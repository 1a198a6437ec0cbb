package tracer

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
