package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// tracePath is where tracedebug serves a capture, with the query it
// takes: what a shell would break at the "&" if it were not quoted.
const tracePath = "/debug/tracer/trace?seconds=5&gzip=1"

// How a traceServer sends its trace.
const (
	sendPlain    = "plain"    // with Content-Length
	sendGzip     = "gzip"     // gzip bytes, as tracedebug's &gzip=1 sends them
	sendEncoding = "encoding" // Content-Encoding: gzip, which Go's transport undoes
	sendSlow     = "slow"     // chunked, in pieces a ticker releases (~100 ms)
)

// A traceServer serves one trace at tracePath, sent as mode says, and
// records the requests it had.
type traceServer struct {
	*httptest.Server
	data []byte
	mode string
	seed uint64

	// cutAt, if not 0, ends the answer after that many bytes of the
	// body by dropping the connection, as a server that dies does.
	cutAt int

	mu       sync.Mutex
	requests []string // the request URI of each
}

// serveTrace starts a traceServer of data, closed when the test ends.
func serveTrace(t *testing.T, data []byte, mode string) *traceServer {
	t.Helper()
	s := &traceServer{data: data, mode: mode, seed: rand.Uint64()}
	s.Server = httptest.NewServer(s)
	t.Cleanup(s.Close)
	return s
}

// url returns the URL of the trace.
func (s *traceServer) url() string { return s.Server.URL + tracePath }

// served returns the request URIs the server had.
func (s *traceServer) served() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

func (s *traceServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.requests = append(s.requests, r.RequestURI)
	s.mu.Unlock()
	body := s.data
	switch s.mode {
	case sendGzip:
		body = gzipped(s.data)
		w.Header().Set("Content-Type", "application/gzip")
	case sendEncoding:
		if !strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
			http.Error(w, "the test wants a client that takes gzip", http.StatusNotAcceptable)
			return
		}
		body = gzipped(s.data)
		w.Header().Set("Content-Encoding", "gzip")
	}
	if s.mode != sendSlow {
		w.Header().Set("Content-Length", fmt.Sprint(len(body)))
	}
	if s.cutAt > 0 {
		w.Write(body[:s.cutAt])
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler) // the connection drops mid-body
	}
	if s.mode != sendSlow {
		w.Write(body)
		return
	}
	// Ten pieces cut at random bytes (inside events), each flushed
	// apart, a tick after the one before.
	rng := rand.New(rand.NewPCG(s.seed, 1))
	cuts := []int{0, len(body)}
	for range 9 {
		cuts = append(cuts, rng.IntN(len(body)))
	}
	slices.Sort(cuts)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for i := range len(cuts) - 1 {
		if i > 0 {
			select {
			case <-tick.C:
			case <-r.Context().Done():
				return
			}
		}
		w.Write(body[cuts[i]:cuts[i+1]])
		w.(http.Flusher).Flush()
	}
}

// streamed returns a trace of about size bytes as the tracer package
// streams one (and tracedebug serves it): the bare array, which a file
// cut short by a crash also is.
func streamed(t *testing.T, size int64) []byte {
	t.Helper()
	path := generate(t, filepath.Join(t.TempDir(), "s.json.gz"), size)
	gz, err := os.ReadFile(path)
	require.NoError(t, err)
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	require.NoError(t, err)
	data, err := io.ReadAll(zr)
	require.NoError(t, err)
	// Close made the file the object form: its array is the stream.
	const head = `{"displayTimeUnit":"ns","traceEvents":`
	require.True(t, bytes.HasPrefix(data, []byte(head)) && bytes.HasSuffix(data, []byte("]\n}\n")), "%.60q", data)
	return data[len(head) : len(data)-len("}\n")]
}

// gzipped returns data gzipped.
func gzipped(data []byte) []byte {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write(data)
	zw.Close()
	return b.Bytes()
}

// TestIsURL: only http:// and https:// URLs are fetched; anything else is
// a file's name.
func TestIsURL(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]bool{
		"http://localhost:6060/debug/tracer/trace?seconds=5&gzip=1": true,
		"https://host/recent": true,
		"HTTP://host/x":       true,
		"http://":             false,
		"ftp://host/x":        false,
		"trace.json":          false,
		"./http://x":          false,
		"-":                   false,
		"http:trace.json":     false,
	} {
		assert.Equal(t, want, isURL(name), name)
	}
}

// TestURLSameAsFile runs every command that reads a trace on a URL
// answered in each way a server may send it, and on the file of the same
// bytes, and wants the same output but the name: a trace the tracer
// package wrote, plain, gzip, gzipped by the HTTP layer, and in pieces.
// The URL's query reaches the server whole.
func TestURLSameAsFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	data, err := os.ReadFile(generate(t, filepath.Join(dir, "a.json"), 64<<10))
	require.NoError(t, err)
	var deep strings.Builder
	deep.WriteString("[\n")
	for i := 599; i >= 0; i-- {
		fmt.Fprintf(&deep, `{"name":"g","ph":"X","ts":%d,"dur":%d,"pid":1,"tid":2},`+"\n", i, 2*(600-i))
	}
	deep.WriteString(`{"name":"h","ph":"X","ts":0,"dur":1,"pid":1,"tid":3}]`)
	traces := map[string][]byte{"a": data, "stream": streamed(t, 64<<10), "deep": []byte(deep.String())}

	for _, mode := range []string{sendPlain, sendGzip, sendEncoding, sendSlow} {
		for _, tc := range []struct {
			name  string
			trace string
			args  []string // FILE is the file or the URL
		}{
			{"check", "a", []string{"check", "FILE"}},
			{"check stream", "stream", []string{"check", "FILE"}},
			{"stats stream", "stream", []string{"stats", "FILE"}},
			{"stats", "a", []string{"stats", "-top", "0", "FILE"}},
			{"stats json", "a", []string{"stats", "-json", "FILE"}},
			{"stats deep", "deep", []string{"stats", "-json", "FILE"}}, // read twice
			{"cut", "a", []string{"cut", "-from", "0s", "-o", "-", "FILE"}},
			{"repair", "a", []string{"repair", "-o", "-", "FILE"}},
			{"merge", "a", []string{"merge", "-o", "-", "FILE"}},
		} {
			t.Run(mode+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				srv := serveTrace(t, traces[tc.trace], mode)
				file := filepath.Join(t.TempDir(), "trace.json")
				body := traces[tc.trace]
				if mode == sendGzip {
					body = gzipped(body) // the file of the bytes sent
				}
				require.NoError(t, os.WriteFile(file, body, 0o644))
				t.Logf("seed %d", srv.seed)

				args := func(name string) []string {
					out := slices.Clone(tc.args)
					out[slices.Index(out, "FILE")] = name
					return out
				}
				code, want, stderrFile := runCmd(args(file)...)
				require.Equal(t, 0, code, stderrFile)
				code, got, stderr := runCmd(args(srv.url())...)
				require.Equal(t, 0, code, stderr)
				got = strings.ReplaceAll(got, srv.url(), file)
				got = strings.ReplaceAll(got, strings.ReplaceAll(srv.url(), "&", `\u0026`), file) // in JSON
				assert.Equal(t, want, got)
				assert.Equal(t, stderrFile, strings.ReplaceAll(stderr, srv.url(), file))
				assert.Regexp(t, `[1-9]\d* events|"name"`, got, "events read, not nothing")
				assert.Equal(t, []string{tracePath}, srv.served(), "one GET, its query whole")
			})
		}
	}
}

// TestURLErrors: a server's refusal is one line with its status and the
// first line of what it said; no server, or no such host, names the URL;
// exit status 1.
func TestURLErrors(t *testing.T) {
	t.Parallel()
	mux := http.NewServeMux()
	mux.HandleFunc("/busy", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "a capture is already running (started 2s ago, 3s to go)\nsecond line", http.StatusConflict)
	})
	mux.HandleFunc("/fail", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "tracer: cannot start: no tracer running", http.StatusInternalServerError)
	})
	mux.HandleFunc("/html", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(http.StatusBadGateway)
		io.WriteString(w, "<!DOCTYPE html>\n<html><head><title>502 Bad Gateway</title></head>\n<body>nginx</body></html>\n")
	})
	mux.HandleFunc("/brotli", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Encoding", "br")
		io.WriteString(w, "not for us")
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	refused := "http://" + l.Addr().String() + tracePath
	l.Close()

	for _, tc := range []struct {
		url     string
		wantErr string
	}{
		{srv.URL + "/nope?seconds=1", "the server answered 404 Not Found: 404 page not found"},
		{srv.URL + "/busy?seconds=1", "the server answered 409 Conflict: a capture is already running (started 2s ago, 3s to go)\n"},
		{srv.URL + "/fail", "the server answered 500 Internal Server Error: tracer: cannot start: no tracer running\n"},
		{srv.URL + "/html", "the server answered 502 Bad Gateway: 502 Bad Gateway\n"},
		{srv.URL + "/brotli", `the answer is in Content-Encoding "br", which tracer does not read`},
		{refused, "connection refused"},
		{"http://nosuch.invalid/debug/tracer/trace", "nosuch.invalid"},
	} {
		for _, cmd := range [][]string{{"stats"}, {"check"}, {"cut", "-o", "-"}, {"repair", "-o", "-"}, {"view", "-no-browser", "-port", "0"}} {
			t.Run(strings.TrimPrefix(tc.url, srv.URL)+"/"+cmd[0], func(t *testing.T) {
				t.Parallel()
				code, stdout, stderr := runCmd(append(cmd, tc.url)...)
				assert.Equal(t, 1, code, stderr)
				assert.Empty(t, stdout)
				assert.Contains(t, stderr, tc.wantErr)
				if cmd[0] == "view" {
					stderr = strings.TrimPrefix(stderr, "fetching "+tc.url+"\n")
				}
				assert.True(t, strings.HasPrefix(stderr, "tracer "+cmd[0]+": "+tc.url+": "), "the URL first: %s", stderr)
				assert.Equal(t, 1, strings.Count(stderr, "\n"), "one line: %s", stderr)
			})
		}
	}
}

// TestURLOutputs: an output is a file: -o or -i naming a URL, and a
// repair of a URL that says nowhere to write, are usage errors.
func TestURLOutputs(t *testing.T) {
	t.Parallel()
	file := writeFile(t, t.TempDir(), "t.json", "[\n"+ev+"\n]\n")
	u := "http://localhost:1" + tracePath
	for _, args := range [][]string{
		{"repair", "-o", u, file},
		{"repair", "-i", u},
		{"repair", u},
		{"cut", "-o", u, file},
		{"merge", "-o", u, file},
		{"export", "-format", "parquet", "-o", u, file},
		{"export", "-format", "parquet", "-o=" + u, file},
		{"import-go", "-o", u, file},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			t.Parallel()
			code, _, stderr := runCmd(args...)
			assert.Equal(t, 2, code, stderr)
			assert.Regexp(t, "not a URL|needs -o OUT", stderr)
		})
	}
}

// TestURLCut: an answer cut short, by a server that dies mid-capture, is
// read as a file cut there is, and said to be cut: stats counts what
// arrived, check reports the torn event, repair keeps what arrived.
func TestURLCut(t *testing.T) {
	t.Parallel()
	data := streamed(t, 64<<10)
	for _, mode := range []string{sendPlain, sendEncoding, sendSlow} {
		for _, at := range []string{"in an event", "after an event"} {
			if mode == sendEncoding && at == "after an event" {
				continue // the gzip stream is cut, wherever that is in the events
			}
			t.Run(mode+"/"+at, func(t *testing.T) {
				t.Parallel()
				// The middle of the event at the middle of the trace, or
				// just after it: a cut next to its closing brace would
				// leave it whole.
				mid := len(data) / 2
				start := bytes.LastIndex(data[:mid], []byte(",\n")) + 2
				end := start + bytes.Index(data[start:], []byte(",\n")) + 2
				n := (start + end) / 2
				if at == "after an event" {
					n = end
				}
				srv := serveTrace(t, data, mode)
				srv.cutAt = n
				if mode == sendEncoding {
					srv.cutAt = len(gzipped(data)) / 2
					n = gzCut(t, gzipped(data), srv.cutAt)
				}
				file := writeFile(t, t.TempDir(), "cut.json", string(data[:n]))
				cutMsg := "the answer was cut short after"

				code, want, _ := runCmd("stats", "-json", file)
				require.Equal(t, 0, code)
				code, got, stderr := runCmd("stats", "-json", srv.url())
				require.Equal(t, 0, code, stderr)
				var fs, us Stats
				require.NoError(t, json.Unmarshal([]byte(want), &fs))
				require.NoError(t, json.Unmarshal([]byte(got), &us))
				assert.Contains(t, fs.Cut, "the file ends as a crash leaves it")
				assert.Contains(t, us.Cut, fmt.Sprintf("cut: %s %d bytes (unexpected EOF)", cutMsg, n))
				assert.Positive(t, us.Events)
				fs.File, fs.Cut, us.File, us.Cut = "", "", "", ""
				assert.Equal(t, fs, us, "the numbers of what arrived")

				wantCode, want, _ := runCmd("check", file)
				code, got, _ = runCmd("check", srv.url())
				assert.Equal(t, wantCode, code)
				torn := !bytes.HasSuffix(data[:n], []byte(",\n"))
				assert.Equal(t, torn, strings.Contains(got, "the file ends inside an event"), "a torn event is a problem; a cut after one is not")
				got = strings.ReplaceAll(got, srv.url(), file)
				assert.Contains(t, got, cutMsg)
				assert.Equal(t, want, strings.Replace(got, fmt.Sprintf("%s %d bytes (unexpected EOF)", cutMsg, n), "the file ends as a crash leaves it", 1))

				code, repaired, stderr := runCmd("repair", "-o", "-", srv.url())
				require.Equal(t, 0, code, stderr)
				assert.Contains(t, stderr, cutMsg)
				_, fromFile, _ := runCmd("repair", "-o", "-", file)
				assert.Equal(t, fromFile, repaired)
				assert.True(t, json.Valid([]byte(repaired)), "strict JSON")
			})
		}
	}
}

// gzCut returns how many bytes of the data that gz holds come out of its
// first n bytes.
func gzCut(t *testing.T, gz []byte, n int) int {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(gz[:n]))
	require.NoError(t, err)
	got, err := io.ReadAll(zr)
	require.ErrorIs(t, err, io.ErrUnexpectedEOF)
	return len(got)
}

// TestURLMergeAtOnce: the URLs of a merge are fetched at the same time,
// so that their captures cover the same seconds (each server here
// answers only once both asked), and merged as their files are; -offset
// names a URL with its query.
func TestURLMergeAtOnce(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var files, urls []string
	both := make(chan struct{})
	var arrived sync.WaitGroup
	arrived.Add(2)
	go func() { arrived.Wait(); close(both) }()
	for _, name := range []string{"a.json", "b.json"} {
		path := generate(t, filepath.Join(dir, name), 32<<10)
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		files = append(files, path)
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			arrived.Done()
			select {
			case <-both:
				w.Write(data)
			case <-time.After(timeout):
				http.Error(w, "the other server was never asked", http.StatusGatewayTimeout)
			}
		}))
		t.Cleanup(srv.Close)
		urls = append(urls, srv.URL+tracePath)
	}
	code, want, stderr := runCmd("merge", "-o", "-", "-offset", files[1]+"=1ms", files[0], files[1])
	require.Equal(t, 0, code, stderr)
	code, got, stderr := runCmd("merge", "-o", "-", "-offset", urls[1]+"=1ms", urls[0], urls[1])
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, want, got)
}

// TestViewURL: view fetches the URL once, says what it fetched, and
// serves those bytes under the name of the URL's path, which the printed
// link needs no escaping for, query or not.
func TestViewURL(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(generate(t, filepath.Join(t.TempDir(), "a.json"), 64<<10))
	require.NoError(t, err)
	for _, mode := range []string{sendPlain, sendGzip, sendEncoding, sendSlow} {
		t.Run(mode, func(t *testing.T) {
			want := data
			if mode == sendGzip {
				want = gzipped(data)
			}
			l, err := net.Listen("tcp", "127.0.0.1:0")
			require.NoError(t, err)
			_, port, _ := net.SplitHostPort(l.Addr().String())
			l.Close()
			served := "http://127.0.0.1:" + port + "/trace.json"
			if mode == sendGzip {
				served += ".gz"
			}
			var srv *traceServer
			body, _, stdout, stderr := viewAndFetch(t, served, func(idle string) (int, string, string) {
				srv = serveTrace(t, data, mode) // a server per try: what each fetched
				return runCmd("view", "-no-browser", "-port", port, "-idle", idle, srv.url())
			})
			assert.Equal(t, want, body, "the bytes fetched")
			assert.Equal(t, []string{tracePath}, srv.served(), "fetched once")
			_, check, _ := runCmd("check", writeFile(t, t.TempDir(), "t.json", string(data)))
			n := strings.TrimSuffix(check[strings.LastIndex(check, "ok, ")+4:], " events\n")
			assert.Contains(t, stderr, fmt.Sprintf("fetched %s: %d bytes, %s events\n", srv.url(), len(want), n))
			link := strings.TrimPrefix(strings.SplitN(stdout, "\n", 2)[0], "open ")
			u, err := url.Parse(link)
			require.NoError(t, err)
			frag, err := url.Parse(strings.TrimPrefix(u.Fragment, "!"))
			require.NoError(t, err)
			assert.Equal(t, []string{served}, frag.Query()["url"], stdout)
			assert.Contains(t, stdout, "fetched from "+srv.url())
		})
	}
}

// TestFirstLine: what an error's body says, in one line of printable
// text: its first line with text, of an HTML page its first text.
func TestFirstLine(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		body string
		html bool
		want string
	}{
		{"a capture is already running\nsince 2s\n", false, "a capture is already running"},
		{"\n  \r\n  busy \r\n", false, "busy"},
		{"bell\a and\ttab", false, "bell  and tab"},
		{"", false, ""},
		{"<p>not html here</p>", false, "<p>not html here</p>"},
		{"<!DOCTYPE html>\n<html>\n<head><title>502 Bad Gateway</title></head>", true, "502 Bad Gateway"},
		{"<html><body>\n<h1>Busy</h1> a capture runs</body>", true, "Busy a capture runs"},
		{"<a\nhref=x>link</a>", true, "link"},
		{strings.Repeat("x", 5000), false, strings.Repeat("x", 1024)},
	} {
		assert.Equal(t, tc.want, firstLine(strings.NewReader(tc.body), tc.html), "%q", tc.body)
	}
}
