package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"
	"unicode"
)

// Traces from a running program: an input named by an http:// or https://
// URL (tracedebug's /debug/tracer/trace?seconds=5, say) is the body of a
// GET of it, read once, as a pipe is read: streamed through a pipe to the
// command that reads it, or, where the command reads its input twice or
// serves it (stats, check, view) or several URLs are read at once,
// copied to a temporary file as it arrives. The body may take as long as
// the capture it streams: only the connection has a time limit. Ctrl-C
// cancels a fetch.

// connectTimeout bounds the connection to a server (TCP, then TLS).
const connectTimeout = 10 * time.Second

// httpClient makes the requests: no time limit on an answer, which lasts
// as long as the capture it streams.
var httpClient = &http.Client{
	Transport: &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		DialContext:         (&net.Dialer{Timeout: connectTimeout, KeepAlive: 30 * time.Second}).DialContext,
		TLSHandshakeTimeout: connectTimeout,
		ForceAttemptHTTP2:   true,
	},
}

// errInterrupted is a fetch stopped by Ctrl-C.
var errInterrupted = errors.New("interrupted")

// isURL reports whether name is an http:// or https:// URL rather than a
// file's name.
func isURL(name string) bool {
	scheme, rest, ok := strings.Cut(name, "://")
	return ok && rest != "" && (strings.EqualFold(scheme, "http") || strings.EqualFold(scheme, "https"))
}

// noURL returns a usage error if the output path out (of flag, "-o") is
// a URL: outputs are files.
func noURL(flag, out string) error {
	if isURL(out) {
		return usageError{fmt.Sprintf("%s %s: the output is a file, not a URL", flag, out)}
	}
	return nil
}

// A fetch is the answer to a GET of a trace's URL, its body read to a
// pipe or to a temporary file.
type fetch struct {
	url  string
	path string   // where the command reads the body: a pipe's name, or a temporary file
	pipe *os.File // the pipe's read end, if the body goes to a pipe
	size int64    // the body's length, if the server said it (0 if not)
	dir  string   // the temporary directory of a copy, removed by Close

	resp     *http.Response
	cancel   context.CancelFunc // ends the request
	unsignal context.CancelFunc // stops catching Ctrl-C
	sigCtx   context.Context    // done on Ctrl-C

	done chan struct{} // closed once the body is read, to its end or not
	// After done: the bytes of the body read, and why the body ended
	// before its end, if it did (the server died mid-capture, say): cut;
	// interrupted for Ctrl-C; failed if the copy could not be written.
	n           int64
	cut         error
	interrupted bool
	failed      error
	closeOnce   sync.Once
}

// get sends the GET of rawURL and returns the fetch, its body not read
// yet, or an error that says what the server answered (a status other
// than 2xx, with the first line of its body) or why there is no answer.
func get(rawURL string) (*fetch, error) {
	sigCtx, unsignal := signal.NotifyContext(context.Background(), os.Interrupt)
	ctx, cancel := context.WithCancel(sigCtx)
	f := &fetch{url: rawURL, cancel: cancel, unsignal: unsignal, sigCtx: sigCtx, done: make(chan struct{})}
	fail := func(err error) (*fetch, error) {
		cancel()
		unsignal()
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return fail(usageError{fmt.Sprintf("%s: not a URL tracer can fetch: %v", rawURL, unwrapURLError(err))})
	}
	req.Header.Set("User-Agent", "tracer")
	resp, err := httpClient.Do(req)
	if err != nil {
		if f.signalled() {
			return fail(fmt.Errorf("%s: %w", rawURL, errInterrupted))
		}
		return fail(fmt.Errorf("%s: %w", rawURL, unwrapURLError(err)))
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		msg := firstLine(resp.Body, strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html"))
		resp.Body.Close()
		if msg != "" {
			msg = ": " + msg
		}
		return fail(fmt.Errorf("%s: the server answered %s%s", rawURL, resp.Status, msg))
	}
	if ce := resp.Header.Get("Content-Encoding"); ce != "" && !resp.Uncompressed && !strings.EqualFold(ce, "gzip") && !strings.EqualFold(ce, "identity") {
		// Not asked for (the transport asks for gzip only, and undoes it).
		resp.Body.Close()
		return fail(fmt.Errorf("%s: the answer is in Content-Encoding %q, which tracer does not read", rawURL, ce))
	}
	f.resp = resp
	f.size = max(resp.ContentLength, 0)
	return f, nil
}

// unwrapURLError returns the cause of the *url.Error err, which would
// name the URL a second time ("Get \"http://...\": dial tcp ...").
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// firstLine returns the first line of text of an error's body, of its
// first KiB, as printable text; of an HTML page, its first text outside
// tags (its title, often).
func firstLine(body io.Reader, html bool) string {
	sc := bufio.NewScanner(io.LimitReader(body, 1024))
	inTag := false
	for sc.Scan() {
		line := strings.Map(func(r rune) rune {
			switch {
			case html && r == '<':
				inTag = true
				return -1
			case html && r == '>' && inTag:
				inTag = false
				return -1
			case inTag:
				return -1
			case !unicode.IsPrint(r):
				return ' '
			}
			return r
		}, sc.Text())
		if line = strings.TrimSpace(line); line != "" {
			return line
		}
	}
	return ""
}

// stream fetches rawURL and returns the fetch, its body going to a pipe
// that f.path names as the command reads it; where a pipe cannot be named
// (Windows), to a temporary file first.
func stream(rawURL string) (*fetch, error) {
	f, err := get(rawURL)
	if err != nil {
		return nil, err
	}
	r, w, err := os.Pipe()
	if err != nil {
		f.Close()
		return nil, err
	}
	name := pipeName(r)
	if name == "" {
		r.Close()
		w.Close()
		if err := f.toFile(); err != nil {
			return nil, err
		}
		return f, nil
	}
	f.path, f.pipe = name, r
	go func() {
		f.copy(w)
		close(f.done)
		w.Close() // after done: a reader at the end of the pipe sees what ended it
	}()
	return f, nil
}

// download fetches rawURL to a temporary file, which f.path names, and
// returns once the body is read, also when it was cut short.
func download(rawURL string) (*fetch, error) {
	f, err := get(rawURL)
	if err != nil {
		return nil, err
	}
	if err := f.toFile(); err != nil {
		return nil, err
	}
	return f, nil
}

// downloadAll downloads the URLs among names at the same time (so that
// the captures they ask for cover the same seconds), and returns the
// fetches, at the place of their names, nil at the others'.
func downloadAll(names []string) ([]*fetch, error) {
	fetches := make([]*fetch, len(names))
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		if isURL(name) {
			wg.Go(func() { fetches[i], errs[i] = download(name) })
		}
	}
	wg.Wait()
	if err := firstError(errs); err != nil {
		closeAll(fetches)
		return nil, err
	}
	return fetches, nil
}

// firstError returns the first error of errs that is not nil, an
// interruption before any other.
func firstError(errs []error) error {
	for _, err := range errs {
		if errors.Is(err, errInterrupted) {
			return err
		}
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// closeAll closes the fetches that are not nil.
func closeAll(fetches []*fetch) {
	for _, f := range fetches {
		if f != nil {
			f.Close()
		}
	}
}

// toFile copies the body to a temporary file named after the URL and
// returns once it is read: an error for Ctrl-C or a failed write (the
// file is then removed), none for a body cut short (f.cut says so).
func (f *fetch) toFile() error {
	dir, err := os.MkdirTemp("", "tracer-fetch-")
	if err != nil {
		f.Close()
		return err
	}
	f.dir = dir
	tmp, err := os.Create(filepath.Join(dir, f.fileName()))
	if err != nil {
		f.Close()
		return err
	}
	f.path = tmp.Name()
	f.copy(tmp)
	close(f.done)
	magic := make([]byte, 2)
	if _, err := tmp.ReadAt(magic, 0); err == nil && magic[0] == 0x1f && magic[1] == 0x8b && !strings.HasSuffix(f.path, ".gz") {
		// Named as what it holds, for the UI view serves it to.
		if os.Rename(f.path, f.path+".gz") == nil {
			f.path += ".gz"
		}
	}
	if err := tmp.Close(); err != nil && f.failed == nil {
		f.failed = err
	}
	if err := f.err(); err != nil {
		f.Close()
		if f.interrupted {
			err = fmt.Errorf("%s: %w", f.url, err)
		}
		return err
	}
	return nil
}

// fileName returns the name of the temporary copy: the last element of
// the URL's path (trace, recent), as view serves it, with .json (and .gz
// added once it is seen to hold gzip).
func (f *fetch) fileName() string {
	name := "trace"
	if u, err := url.Parse(f.url); err == nil {
		if base := path.Base(u.Path); base != "/" && base != "." && base != "" {
			name = urlName(base)
		}
	}
	if !strings.HasSuffix(name, ".json") && !strings.HasSuffix(name, ".gz") {
		name += ".json"
	}
	return name
}

// copy copies the body to w, then records how it ended. A write that
// fails on a pipe is the command that stopped reading (it failed, or
// needs no more): not an error of the fetch.
func (f *fetch) copy(w io.Writer) {
	buf := make([]byte, 256<<10)
	for {
		n, rerr := f.resp.Body.Read(buf)
		if n > 0 {
			if _, err := w.Write(buf[:n]); err != nil {
				if f.pipe == nil {
					f.failed = fmt.Errorf("writing the copy of %s: %w", f.url, err)
				}
				break
			}
			f.n += int64(n)
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			if f.signalled() {
				f.interrupted = true
			} else {
				f.cut = rerr
			}
			break
		}
	}
	f.resp.Body.Close()
	f.unsignal() // Ctrl-C is the default again: the fetch is over
}

// signalled reports whether Ctrl-C came while the fetch was under way.
func (f *fetch) signalled() bool {
	// The cause describes the signal; stopping the watch cancels with
	// context.Canceled itself.
	cause := context.Cause(f.sigCtx)
	return cause != nil && cause != context.Canceled
}

// err returns why the fetch failed, once it is done: Ctrl-C
// (errInterrupted), or a copy that could not be written. A body cut
// short is no error: what arrived is read as a file cut short is.
func (f *fetch) err() error {
	switch {
	case f.interrupted:
		return errInterrupted
	case f.failed != nil:
		return f.failed
	}
	return nil
}

// ended returns, if the body has been read (done), err's answer; if it
// is still being read, nil. A reader of the pipe that stopped before its
// end (at a damaged gzip member) must not wait for the rest.
func (f *fetch) ended() error {
	select {
	case <-f.done:
		return f.err()
	default:
		return nil
	}
}

// wasCut reports whether the body ended before its end.
func (f *fetch) wasCut() bool {
	select {
	case <-f.done:
		return f.cut != nil
	default:
		return false
	}
}

// cutNote says how the body was cut short, for a command's report.
func (f *fetch) cutNote() string {
	return fmt.Sprintf("the answer was cut short after %d bytes (%v)", f.n, f.cut)
}

// Close ends the request, if its body is still being read, and removes
// the temporary copy.
func (f *fetch) Close() error {
	f.closeOnce.Do(func() {
		f.cancel()
		if f.pipe != nil {
			f.pipe.Close() // a copy blocked on a full pipe fails
			<-f.done
		}
		f.resp.Body.Close()
		f.unsignal()
		if f.dir != "" {
			os.RemoveAll(f.dir)
		}
	})
	return nil
}

// named returns err, the error of opening f.path, with the URL in place
// of that path.
func (f *fetch) named(err error) error {
	if err == nil || !strings.Contains(err.Error(), f.path) {
		return err
	}
	return renamed{err, strings.ReplaceAll(err.Error(), f.path, f.url)}
}

// renamed is an error whose text names the input as the user did.
type renamed struct {
	err error
	msg string
}

func (e renamed) Error() string { return e.msg }
func (e renamed) Unwrap() error { return e.err }

// urls returns how many of names are URLs.
func urls(names []string) int {
	n := 0
	for _, name := range names {
		if isURL(name) {
			n++
		}
	}
	return n
}
