package tracer_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"math"
	"os"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/gotracer/tracer"
)

// The examples write trace.json as a program would, and print the lines of
// the file. Values that differ from run to run are replaced: ts by T, dur
// by D, the process id by P, goroutine ids by G1, G2... and the ids the
// tracer chose by ID1, ID2..., numbered in order of appearance.

// inTempDir makes a temporary directory the working directory until the
// returned function is called, so that an example can write "trace.json".
func inTempDir() (restore func()) {
	wd, err := os.Getwd()
	if err != nil {
		log.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "example")
	if err != nil {
		log.Fatal(err)
	}
	if err := os.Chdir(dir); err != nil {
		log.Fatal(err)
	}
	return func() {
		os.Chdir(wd)
		os.RemoveAll(dir)
	}
}

// printTrace prints the events of the trace file at path.
func printTrace(path string) {
	trace, err := os.ReadFile(path)
	if err != nil {
		log.Fatal(err)
	}
	printEvents(trace)
}

var (
	varying = regexp.MustCompile(`"(ts|dur|pid|ts0_unix_ns|ts0_mono_ns)":[0-9.]+|"ts0_wall":"[^"]*"`)
	tid     = regexp.MustCompile(`"tid":([1-9][0-9]*)`)
	id      = regexp.MustCompile(`"id":[0-9]+|"local":"0x[0-9a-f]+`)
	gname   = regexp.MustCompile(`"goroutine ([1-9][0-9]*)"`)
)

// printEvents prints the lines of a trace that hold events, leaving out
// the tracer's own (the array's or object's head, the process metadata,
// the tracer.dropped counter, the names it gives goroutines the program
// did not name, the end) and the names of goroutines that recorded nothing
// in it (the default tracer remembers the names that other tests in this
// binary set).
func printEvents(trace []byte) { printLines(trace, false) }

// printFile prints every line of a trace.
func printFile(trace []byte) { printLines(trace, true) }

func printLines(trace []byte, all bool) {
	lines := strings.Split(strings.TrimSpace(string(trace)), "\n")
	recorded := map[string]bool{}
	for _, l := range lines {
		if m := tid.FindStringSubmatch(l); m != nil && !strings.Contains(l, `"ph":"M"`) {
			recorded[m[1]] = true
		}
	}
	gids, ids := map[string]int{}, map[string]int{}
	for _, l := range lines {
		own := l == "[" || l == "]" || l == "}" || strings.HasPrefix(l, `{"displayTimeUnit"`) || strings.Contains(l, `"name":"process_name"`) ||
			strings.Contains(l, `"name":"tracer.dropped"`) || gname.MatchString(l) && strings.Contains(l, `"name":"thread_name"`)
		if own && !all {
			continue
		}
		if m := tid.FindStringSubmatch(l); m != nil && !recorded[m[1]] {
			continue
		}
		l = varying.ReplaceAllStringFunc(l, func(s string) string {
			k, _, _ := strings.Cut(s, ":")
			return k + ":" + map[string]string{`"ts"`: "T", `"dur"`: "D", `"pid"`: "P",
				`"ts0_unix_ns"`: "U", `"ts0_mono_ns"`: "M", `"ts0_wall"`: `"W"`}[k]
		})
		l = tid.ReplaceAllStringFunc(l, func(s string) string { return `"tid":G` + number(gids, s) })
		l = gname.ReplaceAllStringFunc(l, func(s string) string {
			return `"goroutine G` + number(gids, `"tid":`+gname.FindStringSubmatch(s)[1]) + `"`
		})
		l = id.ReplaceAllStringFunc(l, func(s string) string {
			k, v, _ := strings.Cut(s, ":")
			if k == `"local"` { // an async id: "0x1"
				return k + `:"ID` + number(ids, v)
			}
			return k + ":ID" + number(ids, v) // a flow id: 1
		})
		fmt.Println(l)
	}
}

// number numbers the distinct values of s in order of appearance.
func number(seen map[string]int, s string) string {
	if _, ok := seen[s]; !ok {
		seen[s] = len(seen) + 1
	}
	return fmt.Sprint(seen[s])
}

// A whole trace file. Its first event, the process's name, carries the
// wall-clock time of ts 0 (ts0_wall), so that files of several processes
// can be aligned; a goroutine the program did not name is named after its
// id; a tracer.dropped counter would say how many events were dropped, had
// any been. While the program runs the file is an array,
// which both viewers open even cut short by a crash; Stop closes it as the
// object that tells chrome://tracing to draw nanoseconds, and strict JSON.
func Example() {
	defer inTempDir()()

	if err := tracer.Start("trace.json", tracer.WithProcessName("server")); err != nil {
		log.Fatal(err)
	}
	tracer.Span("decode", tracer.Int("bytes", 512))()
	if err := tracer.Stop(); err != nil {
		log.Fatal(err)
	}

	trace, _ := os.ReadFile("trace.json")
	printFile(trace)
	// Output:
	// {"displayTimeUnit":"ns","traceEvents":[
	// {"name":"process_name","ph":"M","pid":P,"tid":0,"args":{"name":"server","ts0_wall":"W","ts0_unix_ns":U,"ts0_mono_ns":M}},
	// {"name":"thread_name","ph":"M","pid":P,"tid":G1,"args":{"name":"goroutine G1"}},
	// {"name":"decode","ph":"X","ts":T,"dur":D,"pid":P,"tid":G1,"args":{"bytes":512}},
	// {"name":"process_name","ph":"M","pid":P,"tid":0,"args":{"name":"server","ts0_wall":"W","ts0_unix_ns":U,"ts0_mono_ns":M}}
	// ]
	// }
}

// The usual span measures the rest of the function that starts it. Spans
// nest on their goroutine's track; each is written when it ends, so the
// inner one comes first.
func ExampleSpan() {
	defer inTempDir()()
	tracer.Start("trace.json")

	decode := func(data []byte) {
		defer tracer.Span("decode", tracer.Int("bytes", len(data)))()
		// ...
	}
	handle := func() {
		defer tracer.Span("handle")()
		decode([]byte("{}"))
	}
	handle()

	tracer.Stop()
	printTrace("trace.json")
	// Output:
	// {"name":"decode","ph":"X","ts":T,"dur":D,"pid":P,"tid":G1,"args":{"bytes":2}},
	// {"name":"handle","ph":"X","ts":T,"dur":D,"pid":P,"tid":G1},
}

// Args known only when the span ends go to the function Span returned, and
// join the span's args.
func ExampleSpan_endArgs() {
	defer inTempDir()()
	tracer.Start("trace.json")

	serve := func(route string) (err error) {
		end := tracer.Span("request", tracer.String("route", route))
		defer func() { end(tracer.Int("status", 500), tracer.Err(err)) }()
		return errors.New("database unavailable")
	}
	serve("/items")

	tracer.Stop()
	printTrace("trace.json")
	// Output:
	// {"name":"request","ph":"X","ts":T,"dur":D,"pid":P,"tid":G1,"args":{"route":"/items","status":500,"error":"database unavailable"}},
}

// A LongSpan is in the file from the next flush on, as a begin ("B")
// event, so a trace read while the work runs, or left by a crash, shows
// it; its end is an end ("E") event. A short span inside it is still one
// "X" event.
func ExampleLongSpan() {
	defer inTempDir()()
	tracer.Start("trace.json")

	end := tracer.LongSpan("migration", tracer.String("table", "users"))
	tracer.Span("copy rows")()
	end(tracer.Int("rows", 1000))

	tracer.Stop()
	printTrace("trace.json")
	// Output:
	// {"name":"migration","ph":"B","ts":T,"pid":P,"tid":G1,"args":{"table":"users"}},
	// {"name":"copy rows","ph":"X","ts":T,"dur":D,"pid":P,"tid":G1},
	// {"name":"migration","ph":"E","ts":T,"pid":P,"tid":G1,"args":{"rows":1000}},
}

// Instants mark a moment on the goroutine's track ("s":"t"), the
// process's ("s":"p") or the whole trace's ("s":"g").
func ExampleInstant() {
	defer inTempDir()()
	tracer.Start("trace.json")

	tracer.Instant("cache miss", tracer.String("key", "user:42"))
	tracer.InstantProcess("config reloaded")
	tracer.InstantGlobal("deploy started")

	tracer.Stop()
	printTrace("trace.json")
	// Output:
	// {"name":"cache miss","ph":"i","ts":T,"s":"t","pid":P,"tid":G1,"args":{"key":"user:42"}},
	// {"name":"config reloaded","ph":"i","ts":T,"s":"p","pid":P,"tid":G1},
	// {"name":"deploy started","ph":"i","ts":T,"s":"g","pid":P,"tid":G1},
}

// A counter event carries several series; Perfetto draws a graph for each
// ("queue depth", "queue load") on the process, whichever goroutine
// records them.
func ExampleCounter() {
	defer inTempDir()()
	tracer.Start("trace.json")

	queue := []int{1, 2, 3}
	tracer.Counter("queue", tracer.Int("depth", len(queue)), tracer.Float64("load", 0.75))

	tracer.Stop()
	printTrace("trace.json")
	// Output:
	// {"name":"queue","ph":"C","ts":T,"pid":P,"args":{"depth":3,"load":0.75}},
}

// An async operation begins on one goroutine and ends on another (G2
// here). The viewers draw it, and the children begun with its Begin, on a
// track of its own, found by its id.
func ExampleAsyncBegin() {
	defer inTempDir()()
	tracer.Start("trace.json")

	op := tracer.AsyncBegin("download", tracer.Category("net"), tracer.String("file", "a.zip"))
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		part := op.Begin("part", tracer.Int("n", 1))
		part.End()
		op.Instant("verified")
		op.End(tracer.Int("bytes", 4096))
	}()
	wg.Wait()

	tracer.Stop()
	printTrace("trace.json")
	// Output:
	// {"name":"download","cat":"net","ph":"b","ts":T,"pid":P,"tid":G1,"id2":{"local":"ID1"},"args":{"file":"a.zip"}},
	// {"name":"part","cat":"net","ph":"b","ts":T,"pid":P,"tid":G2,"id2":{"local":"ID1"},"args":{"n":1}},
	// {"name":"part","cat":"net","ph":"e","ts":T,"pid":P,"tid":G2,"id2":{"local":"ID1"}},
	// {"name":"verified","cat":"net","ph":"n","ts":T,"pid":P,"tid":G2,"id2":{"local":"ID1"}},
	// {"name":"download","cat":"net","ph":"e","ts":T,"pid":P,"tid":G2,"id2":{"local":"ID1"},"args":{"bytes":4096}},
}

// AsyncBeginID takes an id the program already has, such as a request or
// row id. A Namespace keeps it apart from the same id in another space; an
// operation without a Category has an empty one, which chrome://tracing
// needs.
func ExampleAsyncBeginID() {
	defer inTempDir()()
	tracer.Start("trace.json")

	op := tracer.AsyncBeginID(7, "query", tracer.Namespace("db"))
	op.End()

	tracer.Stop()
	printTrace("trace.json")
	// Output:
	// {"name":"query","cat":"","ph":"b","ts":T,"pid":P,"tid":G1,"id2":{"local":"db:0x7"},"scope":"db"},
	// {"name":"query","cat":"","ph":"e","ts":T,"pid":P,"tid":G1,"id2":{"local":"db:0x7"},"scope":"db"},
}

// A flow draws an arrow from the span that queued a job (on G1) to the
// span that ran it (on G2). Each flow event binds to the span open on its
// goroutine; the end says so with "bp":"e".
func ExampleFlowBegin() {
	defer inTempDir()()
	tracer.Start("trace.json")

	jobs := make(chan tracer.Flow, 1)
	func() {
		defer tracer.Span("enqueue")()
		jobs <- tracer.FlowBegin("job")
	}()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer tracer.Span("run")()
		(<-jobs).End()
	}()
	wg.Wait()

	tracer.Stop()
	printTrace("trace.json")
	// Output:
	// {"name":"job","ph":"s","ts":T,"pid":P,"tid":G1,"id":ID1},
	// {"name":"enqueue","ph":"X","ts":T,"dur":D,"pid":P,"tid":G1},
	// {"name":"job","ph":"f","ts":T,"pid":P,"tid":G2,"id":ID1,"bp":"e"},
	// {"name":"run","ph":"X","ts":T,"dur":D,"pid":P,"tid":G2},
}

// A flow reaches the goroutine that finishes the work through a context,
// not through a parameter.
func ExampleContextWithFlow() {
	defer inTempDir()()
	tracer.Start("trace.json")

	ctx := context.Background()
	end := tracer.Span("enqueue")
	ctx = tracer.ContextWithFlow(ctx, tracer.FlowBegin("job"))
	end()

	done := make(chan struct{})
	go func() {
		defer close(done)
		defer tracer.Span("run job")()
		tracer.FlowFromContext(ctx).End()
	}()
	<-done

	tracer.Stop()
	printTrace("trace.json")
	// Output:
	// {"name":"job","ph":"s","ts":T,"pid":P,"tid":G1,"id":ID1},
	// {"name":"enqueue","ph":"X","ts":T,"dur":D,"pid":P,"tid":G1},
	// {"name":"job","ph":"f","ts":T,"pid":P,"tid":G2,"id":ID1,"bp":"e"},
	// {"name":"run job","ph":"X","ts":T,"dur":D,"pid":P,"tid":G2},
}

// Categories group events, and only the enabled ones are recorded. Declare
// a category once, at package level, and pass it like an arg.
func ExampleCategory() {
	defer inTempDir()()
	var (
		catDB    = tracer.Category("db")
		catCache = tracer.Category("cache")
	)
	tracer.Start("trace.json", tracer.WithCategories("db"))

	tracer.Span("query", catDB)()
	tracer.Span("lookup", catCache)() // not recorded: "cache" is not enabled
	fmt.Println("cache enabled:", tracer.CategoryEnabled(catCache))

	tracer.SetCategories("db", "cache") // while the program runs
	tracer.Span("lookup", catCache)()
	tracer.SetCategories() // every category again

	tracer.Stop()
	printTrace("trace.json")
	// Output:
	// cache enabled: false
	// {"name":"query","cat":"db","ph":"X","ts":T,"dur":D,"pid":P,"tid":G1},
	// {"name":"lookup","cat":"cache","ph":"X","ts":T,"dur":D,"pid":P,"tid":G1},
}

// Enabled tells whether the default tracer records, so that a name or an
// arg that costs something to build is built only for a trace. The
// recording calls themselves need no such check.
func ExampleEnabled() {
	defer inTempDir()()
	key := "user:42"
	miss := func() {
		if tracer.Enabled() {
			tracer.Instant(fmt.Sprintf("cache miss for %s", key))
		}
	}

	miss() // tracing is off: nothing is built or recorded
	tracer.Start("trace.json")
	miss()
	tracer.Stop()

	printTrace("trace.json")
	// Output:
	// {"name":"cache miss for user:42","ph":"i","ts":T,"s":"t","pid":P,"tid":G1},
}

// A goroutine's track shows its name (thread_name metadata) rather than its
// id. A name set before Start, or before a Stop and Start, is in every later
// file too.
func ExampleSetGoroutineName() {
	defer inTempDir()()
	tracer.Start("trace.json")

	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tracer.SetGoroutineName("worker 1")
		tracer.Span("process")()
	}()
	wg.Wait()

	tracer.Stop()
	printTrace("trace.json")
	// Output:
	// {"name":"thread_name","ph":"M","pid":P,"tid":G1,"args":{"name":"worker 1"}},
	// {"name":"process","ph":"X","ts":T,"dur":D,"pid":P,"tid":G1},
}

// Each Arg constructor writes its JSON type. Durations and times are text
// the flusher makes, and JSON has no NaN.
func ExampleArg() {
	defer inTempDir()()
	tracer.Start("trace.json")

	tracer.Instant("args",
		tracer.String("s", "text"),
		tracer.Int("i", -1),
		tracer.Uint64("u", math.MaxUint64),
		tracer.Float64("f", 0.5),
		tracer.Float64("nan", math.NaN()),
		tracer.Bool("b", true),
		tracer.Duration("d", 1500*time.Microsecond),
		tracer.Time("t", time.Date(2026, 1, 2, 15, 4, 5, 0, time.FixedZone("CET", 3600))),
		tracer.Err(errors.New("not found")),
		tracer.Err(nil), // no error: no arg
	)

	tracer.Stop()
	printTrace("trace.json")
	// Output:
	// {"name":"args","ph":"i","ts":T,"s":"t","pid":P,"tid":G1,"args":{"s":"text","i":-1,"u":18446744073709551615,"f":0.5,"nan":"NaN","b":true,"d":"1.5ms","t":"2026-01-02T14:04:05Z","error":"not found"}},
}

type userID int

func (u *userID) String() string { return fmt.Sprintf("user-%d", int(*u)) }

// A Stringer arg is formatted only if the event is recorded, so a span
// that carries one costs no formatting when tracing is off. Pass a
// pointer: Go allocates to make an interface of a plain value.
func ExampleStringer() {
	defer inTempDir()()
	tracer.Start("trace.json")

	u := userID(42)
	tracer.Span("load profile", tracer.Stringer("user", &u))()

	tracer.Stop()
	printTrace("trace.json")
	// Output:
	// {"name":"load profile","ph":"X","ts":T,"dur":D,"pid":P,"tid":G1,"args":{"user":"user-42"}},
}
