//go:build linux

package main

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gotracer/tracer"
)

// The workload shapes: code written the way Go programs use the tracer.
// Every event carries the "id" arg of the ledger, and every goroutine that
// records ticks its progress slot, saying when it waits for work rather
// than for the tracer.

// runShape starts shape s (the si-th of the tracer) on wg.
func (e *tenv) runShape(ctx context.Context, wg *sync.WaitGroup, si int, s Shape) {
	switch s.Kind {
	case shapePool:
		e.pool(ctx, wg, si, s)
	case shapeServer:
		e.server(ctx, wg, si, s)
	case shapeStale:
		e.stale(ctx, wg, si, s)
	case shapeHandles:
		e.handles(ctx, wg, si, s)
	case shapeAsync:
		e.async(ctx, wg, si, s)
	case shapeCategories:
		e.categories(ctx, wg, si, s)
	default:
		for i := range s.N {
			w := e.worker(fmt.Sprintf("%s%d.%d", s.Kind, si, i))
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer w.prog.done()
				e.loop(ctx, w, s)
				e.c.rep.mark(w)
			}()
		}
	}
}

// loop runs the shapes whose goroutines each record on their own, paced.
func (e *tenv) loop(ctx context.Context, w *worker, s Shape) {
	pc := newPacer(s.Rate / max(1, s.N))
	if s.Kind == shapeLeaker {
		// A span its goroutine never ends: an early return that skipped
		// the end.
		end := e.tr().Span("never ended", w.spanID(clHeld))
		_ = end
	}
	for k := 0; pc.wait(ctx, w.prog); k++ {
		t := e.tr()
		switch s.Kind {
		case shapeRecursion:
			recurse(t, w, s.Depth, s.Work)
		case shapeLeaker:
			// A goroutine that exits inside spans it never ended.
			done := make(chan struct{})
			go func() {
				defer close(done)
				for range s.Depth {
					end := t.Span("leaked", w.spanID(clHeld))
					_ = end
				}
				t.Instant("leaving", w.id(clInstant))
			}()
			<-done
		case shapeCounters:
			if k%50 == 49 {
				// A series no viewer can show: left out and counted.
				t.Counter("queue", tracer.Int("depth", k%100), tracer.Int64("id", w.idValue(clCounter)), tracer.String("state", "busy"))
			} else {
				t.Counter("queue", tracer.Int("depth", k%100), tracer.Int64("id", w.idValue(clCounter)))
			}
		case shapeLogger:
			c := clInstant
			if e.cfg.Categories {
				c = clOptional // the record's level is its category
			}
			func() {
				defer t.Span("handle", w.spanID(clSpan))()
				e.logger(t).Info("served", slog.Int64("id", w.idValue(c)), slog.Int("status", 200))
			}()
		case shapeStringers:
			func() {
				defer t.Span("format", w.spanID(clSpan), tracer.Stringer("obj", e.stringer))()
				spin(200)
			}()
		case shapeFlusher:
			if t != nil {
				m := e.mark(t)
				start := m.at.UnixNano()
				e.c.rep.flush(e.idx, start, 0)
				err := t.Flush()
				if err == nil {
					e.c.rep.flush(e.idx, start, now())
				}
				e.call("Flush", err, m)
			}
		case shapeLong:
			end := t.LongSpan("phase", w.spanID(clHeld))
			for range s.Depth {
				t.Instant("step", w.id(clInstant))
				w.prog.idle()
				time.Sleep(5 * time.Millisecond)
				w.prog.tick()
			}
			end()
		}
		e.maybeMark(w)
	}
}

// maybeMark sends a durability mark for w at most every 20ms.
func (e *tenv) maybeMark(w *worker) {
	if t := now(); t-w.lastMark > int64(20*time.Millisecond) {
		w.lastMark = t
		e.c.rep.mark(w)
	}
}

var spinSink atomic.Uint64

// spin works for about n nanoseconds: the job the span measures.
func spin(n int) {
	x := uint64(n)
	for i := 0; i < n; i++ {
		x = x*6364136223846793005 + 1442695040888963407
	}
	if x == 1 {
		spinSink.Add(1)
	}
}

// A pacer paces a loop at a rate a second; nil runs flat out.
type pacer struct {
	per  time.Duration
	next time.Time
}

func newPacer(rate int) *pacer {
	if rate <= 0 {
		return nil
	}
	return &pacer{per: time.Second / time.Duration(rate), next: time.Now()}
}

// wait waits for the next turn, idle meanwhile, and reports whether ctx
// still runs.
func (p *pacer) wait(ctx context.Context, prog *progress) bool {
	if p == nil {
		return ctx.Err() == nil
	}
	p.next = p.next.Add(p.per)
	t := time.Now()
	if d := p.next.Sub(t); d > time.Millisecond {
		prog.idle()
		ok := sleepCtx(ctx, d)
		prog.tick()
		return ok
	}
	if t.Sub(p.next) > 100*time.Millisecond {
		p.next = t.Add(-100 * time.Millisecond) // behind: no burst to catch up
	}
	return ctx.Err() == nil
}

var stepNames = [...]string{"decode", "validate", "store", "encode", "send"}

// nest records depth spans, each inside the one before.
func nest(t *tracer.Tracer, w *worker, depth, work int) {
	defer t.Span(stepNames[depth%len(stepNames)], w.spanID(clSpan))()
	spin(work)
	if depth > 1 {
		nest(t, w, depth-1, work)
	}
}

func recurse(t *tracer.Tracer, w *worker, depth, work int) {
	defer t.Span("recurse", w.spanID(clSpan))()
	spin(work)
	if depth > 0 {
		recurse(t, w, depth-1, work)
	}
}

// pool is a worker pool fed by a paced producer: each worker may hold a
// span for its life, and runs a job span with steps nested in it per job.
func (e *tenv) pool(ctx context.Context, wg *sync.WaitGroup, si int, s Shape) {
	jobs := make(chan int, 4*s.N)
	for i := range s.N {
		w := e.worker(fmt.Sprintf("pool%d worker %d", si, i))
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer w.prog.done()
			e.tr().SetGoroutineName(fmt.Sprintf("worker %d", i))
			if s.Held {
				defer e.tr().Span("worker", w.spanID(clHeld))()
			}
			for n := 0; ; n++ {
				w.prog.idle()
				_, ok := <-jobs
				if !ok {
					e.c.rep.mark(w)
					return
				}
				w.prog.tick()
				t := e.tr()
				func() {
					if s.Str {
						defer t.Span("job", w.spanID(clSpan), tracer.Stringer("req", e.stringer))()
					} else {
						defer t.Span("job", w.spanID(clSpan))()
					}
					spin(s.Work)
					if s.Depth > 1 {
						nest(t, w, s.Depth-1, s.Work/2)
					}
				}()
				if n%16 == 0 {
					e.maybeMark(w)
				}
			}
		}()
	}
	p := e.c.watch.add(fmt.Sprintf("t%d pool%d producer", e.idx, si))
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer p.done()
		defer close(jobs)
		pc := newPacer(s.Rate)
		for i := 0; pc.wait(ctx, p); i++ {
			select {
			case jobs <- i:
				p.tick()
			case <-ctx.Done():
				return
			}
		}
	}()
}

var routes = [...]string{"GET /items/{id}", "POST /items", "GET /health", "GET /users/{id}"}

// server runs a goroutine per request, in waves of s.N requests in flight.
func (e *tenv) server(ctx context.Context, wg *sync.WaitGroup, si int, s Shape) {
	w := e.worker(fmt.Sprintf("server%d", si))
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer w.prog.done()
		pc := newPacer(max(1, s.Rate/s.N))
		var reqs sync.WaitGroup
		for pc.wait(ctx, w.prog) {
			for r := range s.N {
				reqs.Add(1)
				go func() {
					defer reqs.Done()
					t := e.tr()
					if r%4 == 0 {
						t.SetGoroutineName("conn")
					}
					defer t.Span(routes[r%len(routes)], w.spanID(clSpan))()
					spin(s.Work)
					if s.Depth > 1 {
						nest(t, w, s.Depth-1, s.Work/4)
					}
					if r%8 == 0 {
						t.Instant("cache miss", w.id(clInstant))
					}
				}()
			}
			reqs.Wait()
			w.prog.tick()
			e.maybeMark(w)
		}
		e.c.rep.mark(w)
	}()
}

// stale calls end functions twice (a deferred end after an early one),
// and hands some to a janitor goroutine, which holds no span, to call late.
func (e *tenv) stale(ctx context.Context, wg *sync.WaitGroup, si int, s Shape) {
	late := make(chan func(...tracer.Arg), 64)
	var senders sync.WaitGroup
	for i := range s.N {
		w := e.worker(fmt.Sprintf("stale%d.%d", si, i))
		wg.Add(1)
		senders.Add(1)
		go func() {
			defer wg.Done()
			defer senders.Done()
			defer w.prog.done()
			pc := newPacer(s.Rate / s.N)
			for k := 0; pc.wait(ctx, w.prog); k++ {
				t := e.tr()
				end := t.Span("stale", w.spanID(clSpan))
				spin(100)
				end()
				switch {
				case t == nil:
				case k%2 == 0:
					end() // the second call: ends nothing
					e.l.staleEnds.Add(1)
				case k%5 == 1:
					select {
					case late <- end:
						e.l.staleEnds.Add(1)
					default:
					}
				}
				e.maybeMark(w)
			}
			e.c.rep.mark(w)
		}()
	}
	go func() { senders.Wait(); close(late) }()
	p := e.c.watch.add(fmt.Sprintf("t%d stale%d janitor", e.idx, si))
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer p.done()
		for {
			p.idle()
			end, ok := <-late
			if !ok {
				return
			}
			time.Sleep(time.Millisecond)
			p.tick()
			end()
		}
	}()
}

// handles starts SpanHandles with children, and ends them here, nested,
// or on a finisher goroutine, which starts children of its own; now and
// then a handle is ended twice.
func (e *tenv) handles(ctx context.Context, wg *sync.WaitGroup, si int, s Shape) {
	type work struct {
		h    tracer.SpanHandle
		kids []tracer.SpanHandle
	}
	q := make(chan work, 64)
	var senders sync.WaitGroup
	for i := range s.N {
		w := e.worker(fmt.Sprintf("handles%d.%d", si, i))
		wg.Add(1)
		senders.Add(1)
		go func() {
			defer wg.Done()
			defer senders.Done()
			defer w.prog.done()
			pc := newPacer(s.Rate / s.N)
			for k := 0; pc.wait(ctx, w.prog); k++ {
				t := e.tr()
				h := t.StartSpan("request", w.spanID(clHandle))
				var kids []tracer.SpanHandle
				for range s.Depth - 1 {
					if h.ID() != 0 { // the zero handle (a closed tracer's) records nothing: nothing to count
						kids = append(kids, h.StartChild("call", w.spanID(clHandle)))
					}
				}
				switch k % 3 {
				case 0: // all here, in order
					for j := len(kids) - 1; j >= 0; j-- {
						kids[j].End()
					}
					h.End()
					if k%7 == 0 && h.ID() != 0 {
						h.End() // a second End: ignored, counted
						e.l.handleEnds2.Add(1)
					}
				case 1: // all on the finisher
					w.prog.idle()
					q <- work{h, kids}
					w.prog.tick()
				case 2: // the handle here, its children there
					h.End()
					w.prog.idle()
					q <- work{kids: kids}
					w.prog.tick()
				}
				e.maybeMark(w)
			}
			e.c.rep.mark(w)
		}()
	}
	go func() { senders.Wait(); close(q) }()
	fw := e.worker(fmt.Sprintf("handles%d finisher", si))
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer fw.prog.done()
		for {
			fw.prog.idle()
			it, ok := <-q
			if !ok {
				return
			}
			fw.prog.tick()
			if it.h.ID() != 0 {
				it.h.StartChild("finish", fw.spanID(clHandle)).End()
			}
			for j := len(it.kids) - 1; j >= 0; j-- {
				it.kids[j].End()
			}
			it.h.End()
		}
	}()
}

// async hands queued jobs from producers to consumers: each job is an
// async operation from the producer's span to the consumer's, with a flow
// arrow between the two spans.
func (e *tenv) async(ctx context.Context, wg *sync.WaitGroup, si int, s Shape) {
	type job struct {
		a tracer.Async
		f tracer.Flow
	}
	q := make(chan job, 256)
	var senders sync.WaitGroup
	for i := range s.N {
		w := e.worker(fmt.Sprintf("async%d producer %d", si, i))
		wg.Add(1)
		senders.Add(1)
		go func() {
			defer wg.Done()
			defer senders.Done()
			defer w.prog.done()
			pc := newPacer(s.Rate / s.N)
			for pc.wait(ctx, w.prog) {
				t := e.tr()
				func() {
					defer t.Span("enqueue", w.spanID(clSpan))()
					j := job{t.AsyncBegin("queued job", w.id(clAsync)), t.FlowBegin("job", w.id(clFlow))}
					w.prog.idle()
					q <- j
					w.prog.tick()
				}()
				e.maybeMark(w)
			}
			e.c.rep.mark(w)
		}()
	}
	go func() { senders.Wait(); close(q) }()
	for i := range 2 {
		w := e.worker(fmt.Sprintf("async%d consumer %d", si, i))
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer w.prog.done()
			for {
				w.prog.idle()
				j, ok := <-q
				if !ok {
					e.c.rep.mark(w)
					return
				}
				w.prog.tick()
				t := e.tr()
				func() {
					defer t.Span("consume", w.spanID(clSpan))()
					j.f.End()
					if j.a.ID() == 0 {
						return // begun on a closed tracer: the zero Async records nothing, nothing to count
					}
					j.a.Instant("picked up", w.id(clAsync))
					c := j.a.Begin("work", w.id(clAsync))
					spin(500)
					c.End()
					j.a.End(tracer.Int("status", 0))
				}()
				e.maybeMark(w)
			}
		}()
	}
}

var categoryNames = [...]string{"db", "http", "cache"}

// categories records spans in categories that a switcher turns off and on
// while they run.
func (e *tenv) categories(ctx context.Context, wg *sync.WaitGroup, si int, s Shape) {
	cats := [len(categoryNames)]tracer.Arg{}
	for i, n := range categoryNames {
		cats[i] = tracer.Category(n)
	}
	for i := range s.N {
		w := e.worker(fmt.Sprintf("categories%d.%d", si, i))
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer w.prog.done()
			pc := newPacer(s.Rate / s.N)
			for k := 0; pc.wait(ctx, w.prog); k++ {
				t := e.tr()
				func() {
					defer t.Span("query", cats[k%len(cats)], w.spanID(clOptional))()
					if t.CategoryEnabled(cats[(k+1)%len(cats)]) {
						t.Instant("row", cats[(k+1)%len(cats)], w.id(clOptional))
					}
					t.Instant("no category", w.id(clInstant))
				}()
				e.maybeMark(w)
			}
			e.c.rep.mark(w)
		}()
	}
	p := e.c.watch.add(fmt.Sprintf("t%d categories%d switcher", e.idx, si))
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer p.done()
		d := newDraw(e.c.cfg.Seed, 200+uint64(e.idx))
		for {
			p.idle()
			if !sleepCtx(ctx, d.between(20*time.Millisecond, 200*time.Millisecond)) {
				return
			}
			p.tick()
			var on []string
			for _, n := range categoryNames {
				if d.chance(0.5) {
					on = append(on, n)
				}
			}
			if t := e.tr(); t != nil {
				e.call("SetCategories", t.SetCategories(on...), e.mark(nil))
			}
		}
	}()
}
