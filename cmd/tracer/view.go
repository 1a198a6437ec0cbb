package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"time"

	"github.com/gotracer/tracer/internal/tracefile"
)

// Opening a trace in Perfetto's UI the way Perfetto documents for a local
// file: serve it on 127.0.0.1, on port 9001 (the one origin the UI's
// content security policy lets it fetch from), with the CORS header for
// https://ui.perfetto.dev, and open the UI at ?url= naming it. The UI
// fetches it into the browser; nothing leaves the machine.

// perfettoUI is the Perfetto UI's origin.
const perfettoUI = "https://ui.perfetto.dev"

// viewPort is the port the Perfetto UI fetches local traces from.
const viewPort = 9001

// browserLimit is the size past which the Perfetto UI in a browser tab
// usually fails to open a trace (it holds it in the tab's memory).
const browserLimit = 1 << 30

// defaultIdle is how long view serves with no request before it stops.
const defaultIdle = 10 * time.Minute

// runView is "tracer view".
func runView(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("view", "[-no-browser] [-port N] [-idle D] FILE", stderr)
	noBrowser := fs.Bool("no-browser", false, "print the URL instead of opening a browser (also when TRACER_NO_BROWSER is set)")
	port := fs.Int("port", viewPort, "serve on this port of 127.0.0.1 (the Perfetto UI fetches only from 9001)")
	idle := fs.Duration("idle", defaultIdle, "stop after this long without a request (0: only on Ctrl-C)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usageError{"view takes one file"}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	path := fs.Arg(0)
	var st os.FileInfo
	if !isURL(path) {
		var err error
		if st, err = os.Stat(path); err != nil {
			return err
		}
		if !st.Mode().IsRegular() {
			return fmt.Errorf("%s is not a regular file", path)
		}
		if err := refuseNotTrace(path); err != nil {
			return err
		}
		fmt.Fprint(stderr, sizeWarning(path, st.Size()))
	}
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(*port)))
	if err != nil {
		return fmt.Errorf("cannot serve on 127.0.0.1:%d (%w): is another tracer view running?", *port, err)
	}
	defer l.Close()
	serve, name := path, path
	if isURL(path) {
		// Fetched once, before the browser opens: a capture of N seconds
		// answers in N seconds, and the UI would give up waiting.
		fmt.Fprintf(stderr, "fetching %s\n", path)
		f, err := fetchForView(path, stderr)
		if err != nil {
			return err
		}
		defer f.Close()
		if ctx.Err() != nil {
			return fmt.Errorf("%s: %w", path, errInterrupted)
		}
		serve, name = f.path, fmt.Sprintf("%s (fetched from %s)", filepath.Base(f.path), path)
	}
	v := newViewer(serve, l)
	link := v.uiURL()
	opened := false
	if !*noBrowser && os.Getenv("TRACER_NO_BROWSER") == "" {
		opened = openBrowser(link) == nil
	}
	until := "until Ctrl-C"
	if *idle > 0 {
		until = fmt.Sprintf("until Ctrl-C, or %v without a request", *idle)
	}
	if opened {
		fmt.Fprintf(stdout, "opened %s\nserving %s on %s %s (reloading the tab fetches it again)\n", link, name, v.base(), until)
	} else {
		fmt.Fprintf(stdout, "open %s\nin a browser on this machine (serving %s on %s %s).\n"+
			"Over SSH, forward the port first: ssh -L %d:127.0.0.1:%d HOST\n", link, name, v.base(), until, *port, *port)
	}
	return v.serve(ctx, *idle)
}

// refuseNotTrace returns an error if the file at path (plain or gzip) is
// no JSON trace at all, a text or binary file: the UI would load it only
// to say it cannot. It reads up to the first event. (A URL's answer is
// checked as fetchForView reads it.)
func refuseNotTrace(path string) error {
	in, err := openFetched(path, path, nil, true, nil)
	if err != nil {
		return err
	}
	defer in.Close()
	_, _ = in.reader().Next() // a later event's problem is the UI's to show
	return in.errNotTrace()
}

// fetchForView downloads the trace at rawURL for view, and says on
// stderr what it fetched: its bytes, its events and whether it was cut
// short. An answer that is no JSON trace is an error.
func fetchForView(rawURL string, stderr io.Writer) (*fetch, error) {
	f, err := download(rawURL)
	if err != nil {
		return nil, err
	}
	events := int64(-1)
	var notTrace error // an answer that is no JSON trace (an error page) is not served
	if in, err := openFetched(rawURL, f.path, f, true, nil); err == nil {
		// Cheap beside the fetch: a few hundred MB a second.
		var n int64
		if in.each(func(*tracefile.Event) error { n++; return nil }) == nil {
			events = n
		}
		notTrace = in.errNotTrace()
		in.Close()
	}
	msg := fmt.Sprintf("fetched %s: %d bytes", rawURL, f.n)
	if events >= 0 {
		msg += fmt.Sprintf(", %d events", events)
	}
	if f.wasCut() {
		msg += "; " + f.cutNote() // what arrived is served: Perfetto opens a trace cut on an event's end
	}
	fmt.Fprintln(stderr, msg)
	if notTrace != nil {
		f.Close()
		return nil, notTrace
	}
	if f.n > browserLimit {
		fmt.Fprintf(stderr, "It is %d MiB: the Perfetto UI in a browser rarely opens more than 1 GiB. "+
			"tracer stats says where the time goes from the command line; trace_processor_shell --httpd opens a saved copy (tracer repair -o FILE URL saves one).\n", f.n>>20)
	}
	return f, nil
}

// A viewer serves one trace file to the Perfetto UI, for as long as it is
// asked for it.
type viewer struct {
	path, name string
	l          net.Listener
	srv        *http.Server

	mu       sync.Mutex
	inFlight int
	last     time.Time // when the last request ended (or serving began)
	activity chan struct{}
}

func newViewer(path string, l net.Listener) *viewer {
	v := &viewer{path: path, name: urlName(filepath.Base(path)), l: l, activity: make(chan struct{}, 1)}
	v.srv = &http.Server{Handler: v}
	return v
}

// urlName returns the name the file is served under: its own, with any
// byte but a letter, a digit, '.', '-' and '_' made '_', so that the URL
// view prints needs no escaping, in a path or in the UI's ?url= (where
// '&', '#', '?', '%' and '+' would break it).
func urlName(name string) string {
	b := []byte(name)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == '_') {
			b[i] = '_'
		}
	}
	return string(b)
}

// base returns the server's address, http://127.0.0.1:PORT.
func (v *viewer) base() string { return "http://" + v.l.Addr().String() }

// fileURL returns the URL of the trace on the server.
func (v *viewer) fileURL() string { return v.base() + "/" + v.name }

// uiURL returns the Perfetto UI's URL that opens the trace.
func (v *viewer) uiURL() string { return perfettoUI + "/#!/?url=" + v.fileURL() }

// serve serves until ctx is done (Ctrl-C) or, if idle is not 0, no
// request came for that long. A client that stalls in the middle of a
// download does not hold it: a second after ctx is done, the connections
// left are closed.
func (v *viewer) serve(ctx context.Context, idle time.Duration) error {
	errc := make(chan error, 1)
	go func() { errc <- v.srv.Serve(v.l) }()
	v.mu.Lock()
	v.last = time.Now()
	v.mu.Unlock()
	var timeout <-chan time.Time
	var timer *time.Timer
	if idle > 0 {
		timer = time.NewTimer(idle)
		defer timer.Stop()
		timeout = timer.C
	}
	for {
		select {
		case <-ctx.Done():
			return v.stop()
		case err := <-errc:
			return err
		case <-v.activity:
		case <-timeout:
			v.mu.Lock()
			quiet, since := v.inFlight == 0, time.Since(v.last)
			v.mu.Unlock()
			if quiet && since >= idle {
				return v.stop()
			}
			timer.Reset(max(idle-since, time.Millisecond))
		}
	}
}

// stop lets the responses under way finish for a second, then closes
// every connection.
func (v *viewer) stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := v.srv.Shutdown(ctx); err != nil {
		return v.srv.Close()
	}
	return nil
}

// ServeHTTP serves the trace at /NAME, to the Perfetto UI's origin, and
// nothing else: another path is 404, a request for another host name (a
// page of another site reaching 127.0.0.1 by DNS rebinding) 403. It
// answers Range requests (http.ServeContent), as a browser resuming a
// download sends them.
func (v *viewer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	v.mu.Lock()
	v.inFlight++
	v.mu.Unlock()
	defer func() {
		v.mu.Lock()
		v.inFlight--
		v.last = time.Now()
		v.mu.Unlock()
		select {
		case v.activity <- struct{}{}:
		default:
		}
	}()
	if host, _, err := net.SplitHostPort(r.Host); err != nil || (host != "127.0.0.1" && host != "localhost") {
		http.Error(w, "tracer view serves 127.0.0.1 only", http.StatusForbidden)
		return
	}
	if r.URL.Path != "/"+v.name {
		http.NotFound(w, r)
		return
	}
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", perfettoUI)
	h.Set("Access-Control-Allow-Methods", "GET, HEAD, OPTIONS")
	h.Set("Access-Control-Allow-Headers", "*")
	h.Set("Cache-Control", "no-store")
	switch r.Method {
	case http.MethodOptions: // a CORS preflight
		w.WriteHeader(http.StatusNoContent)
		return
	case http.MethodGet, http.MethodHead:
	default:
		http.Error(w, "GET only", http.StatusMethodNotAllowed)
		return
	}
	f, err := os.Open(v.path)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	h.Set("Content-Type", "application/octet-stream")
	http.ServeContent(w, r, "", st.ModTime(), f)
}

// openBrowser opens link in the user's browser.
func openBrowser(link string) error {
	var cmd *exec.Cmd
	switch runtime.GOOS {
	case "darwin":
		cmd = exec.Command("open", link)
	case "windows":
		cmd = exec.Command("rundll32", "url.dll,FileProtocolHandler", link)
	default:
		if os.Getenv("DISPLAY") == "" && os.Getenv("WAYLAND_DISPLAY") == "" {
			return errors.New("no display")
		}
		cmd = exec.Command("xdg-open", link)
	}
	return cmd.Start()
}

// sizeWarning returns what to say of a trace of size bytes before serving
// it: nothing, or that the browser will likely fail, and what to run.
func sizeWarning(path string, size int64) string {
	if size <= browserLimit {
		return ""
	}
	return fmt.Sprintf("%s is %d MiB: the Perfetto UI in a browser rarely opens more than 1 GiB. To look at it anyway:\n"+
		"  tracer stats %s                    # where the time goes, from the command line\n"+
		"  trace_processor_shell --httpd %s   # Perfetto's engine outside the browser; the UI offers to use it\n",
		path, size>>20, path, path)
}
