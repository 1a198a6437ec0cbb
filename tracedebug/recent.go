package tracedebug

import (
	"bytes"
	"compress/gzip"
	"errors"
	"net/http"

	"github.com/gotracer/tracer"
	"go.uber.org/atomic"
)

// recorder is the flight recorder /recent dumps.
var recorder atomic.Pointer[tracer.FlightRecorder]

// SetFlightRecorder makes r the flight recorder whose window
// /debug/tracer/recent serves; nil unsets it. The program records into r
// as into any tracer: make it the default tracer
// (tracer.SetDefault(r.Tracer())) for the package-level functions and the
// integrations to record into it:
//
//	r, err := tracer.NewFlightRecorder(tracer.FlightRecorderConfig{MaxAge: 10 * time.Second})
//	if err != nil { ... }
//	tracer.SetDefault(r.Tracer())
//	tracedebug.SetFlightRecorder(r)
//
// While the default tracer is the recorder, /debug/tracer/trace is a tee
// of it: the next seconds, beside the window the recorder keeps.
func SetFlightRecorder(r *tracer.FlightRecorder) { recorder.Store(r) }

// noRecorder is the answer of /recent when the program set no recorder.
const noRecorder = `tracedebug: no flight recorder: the program keeps the last seconds for this page with

	r, err := tracer.NewFlightRecorder(tracer.FlightRecorderConfig{MaxAge: 10 * time.Second})
	if err != nil { ... }
	tracer.SetDefault(r.Tracer()) // the package-level functions record into it
	tracedebug.SetFlightRecorder(r)

or asks for a trace of the next seconds at ./trace?seconds=5
`

// serveRecent answers with the flight recorder's window.
func serveRecent(w http.ResponseWriter, r *http.Request) {
	rec := recorder.Load()
	if rec == nil {
		http.Error(w, noRecorder, http.StatusNotFound)
		return
	}
	out := &recording{w: w, gzip: r.URL.Query().Get("gzip") == "1"}
	// WriteTo builds the trace in memory before it writes a byte, so a
	// failure to take it still gets its status.
	if n, err := rec.WriteTo(out); err != nil && n == 0 {
		status := http.StatusInternalServerError
		if errors.Is(err, tracer.ErrClosed) {
			status = http.StatusGone
		}
		http.Error(w, "tracedebug: the flight recorder: "+err.Error(), status)
		return
	}
	out.close()
}

// gzipMagic starts every gzip stream.
var gzipMagic = []byte{0x1f, 0x8b}

// A recording is the response of /recent as FlightRecorder.WriteTo writes
// it: its first write says whether the recorder compresses (WithGzip),
// which sets the headers, and gzip=1 compresses what it does not.
type recording struct {
	w      http.ResponseWriter
	gzip   bool
	zw     *gzip.Writer
	headed bool
}

func (o *recording) Write(p []byte) (int, error) {
	if !o.headed {
		o.headed = true
		gz := bytes.HasPrefix(p, gzipMagic)
		if o.gzip && !gz {
			o.zw = gzip.NewWriter(o.w)
		}
		attachment(o.w.Header(), "recent", gz || o.zw != nil)
	}
	if o.zw != nil {
		return o.zw.Write(p)
	}
	return o.w.Write(p)
}

// close ends the compressed stream, if any.
func (o *recording) close() {
	if o.zw != nil {
		_ = o.zw.Close()
	}
}
