// Command services traces two processes that talk HTTP, each into its own
// file, to be merged into one trace: a frontend (this process) that
// sends requests from three goroutines, and a backend (this program run
// again as a child, with -backend) that serves them on 127.0.0.1. Both
// use tracehttp, which carries a W3C traceparent header from one to the
// other. It leaves frontend.json and backend.json in the working
// directory; then
//
//	go run ./cmd/tracer merge -o services.json frontend.json backend.json
//
// aligns the two clocks and draws an arrow from each request's HTTP GET
// span in the frontend to the span of the backend that served it, with
// the backend's own spans nested inside.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/gotracer/tracer"
	"github.com/gotracer/tracer/tracehttp"
)

// lanes draws goroutines on lanes (tracer.WithLanes), in both processes.
var lanes = flag.Bool("lanes", false, "draw goroutines on lanes per group (tracer.WithLanes)")

// options returns the tracer options of the process named name.
func options(name string, sort int) []tracer.Option {
	opts := []tracer.Option{tracer.WithProcessName(name), tracer.WithProcessSortIndex(sort)}
	if *lanes {
		opts = append(opts, tracer.WithLanes())
	}
	return opts
}

func main() {
	backend := flag.Bool("backend", false, "serve, as the backend process, until standard input closes")
	flag.Parse()
	if *backend {
		serve()
		return
	}
	if err := tracer.Start("frontend.json", options("frontend", 1)...); err != nil {
		log.Fatal(err)
	}
	defer tracer.Stop()
	tracer.SetGoroutineName("main")

	// The backend: this program again, in a process of its own.
	cmd := exec.Command(os.Args[0], "-backend", fmt.Sprintf("-lanes=%v", *lanes))
	cmd.Env = append(os.Environ(), tracer.EnvFile+"=") // the backend's file is its own
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		log.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		log.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		log.Fatal(err)
	}
	addr, _ := bufio.NewReader(stdout).ReadString('\n')
	addr = strings.TrimSpace(addr)

	client := &http.Client{Transport: tracehttp.Transport(nil)}
	var wg sync.WaitGroup
	for w := range 3 {
		wg.Go(func() {
			tracer.SetGoroutineName(fmt.Sprintf("client %d", w))
			for i := range 4 {
				page(client, addr, w*4+i)
			}
		})
	}
	wg.Wait()
	stdin.Close() // the backend stops, and closes its file
	if err := cmd.Wait(); err != nil {
		log.Fatal(err)
	}
	fmt.Println("wrote frontend.json and backend.json: go run ./cmd/tracer merge -o services.json frontend.json backend.json")
}

// page renders one page of the frontend: a request to the backend inside.
func page(client *http.Client, addr string, n int) {
	defer tracer.Span("render page", tracer.Int("n", n))()
	resp, err := client.Get(fmt.Sprintf("http://%s/items/%d", addr, n))
	if err != nil {
		log.Print(err)
		return
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	time.Sleep(300 * time.Microsecond) // the rest of the page
}

// serve is the backend: it prints its address and serves until its
// standard input closes.
func serve() {
	if err := tracer.Start("backend.json", options("backend", 2)...); err != nil {
		log.Fatal(err)
	}
	defer tracer.Stop()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /items/{id}", func(w http.ResponseWriter, r *http.Request) {
		func() {
			defer tracer.Span("cache lookup")()
			time.Sleep(200 * time.Microsecond)
		}()
		func() {
			defer tracer.Span("db query", tracer.String("id", r.PathValue("id")))()
			time.Sleep(time.Millisecond)
		}()
		fmt.Fprintf(w, "item %s", r.PathValue("id"))
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	srv := &http.Server{Handler: tracehttp.Middleware(mux)}
	go srv.Serve(ln)
	fmt.Println(ln.Addr())
	io.Copy(io.Discard, os.Stdin)
	srv.Close()
}
