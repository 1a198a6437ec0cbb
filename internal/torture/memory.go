//go:build linux

package main

import (
	"fmt"
	"time"

	"github.com/gotracer/tracer"
)

// The tracer's own memory: the child's live heap (runtime/metrics'
// /gc/heap/live:bytes, sampled every 100ms, and after a GC at the points
// that matter) against the same workload run untraced first, within the
// bound docs/guarantees.md states for the configuration.

// memoryBound returns the most live heap the tracers of c may hold beyond
// the untraced workload's, with the terms it adds up, as the "Memory is
// bounded" bullet of docs/guarantees.md states it:
//
//   - the chunks, at most WithBufferLimit (32 MiB by default) or two more
//     than there are Ps, 64 KiB each, and the reserve of two chunks that
//     code the tracer runs may record into ("Code the tracer runs never
//     freezes it");
//   - each P's span tokens: 192 KiB, plus 48 bytes for each span open on
//     it at once;
//   - eight encoded batches of about 256 KiB queued for the writer, and a
//     rotation's first batch larger by the B events of the spans open
//     across it, about 100 bytes each;
//   - the flusher's table of open spans, at most 220 bytes a span open at
//     once, plus 32 bytes for each of its arg slots;
//   - a flight recorder's window, FlightRecorderConfig.MaxBytes, and
//     as much again while a dump builds its trace.
//
// held is the most spans the workload holds open at once, by its shapes,
// never the number it starts: memory must not grow with spans started
// while the number held stays the same. idle is the bound once the
// workload stopped and the buffers a burst left were freed: the chunks
// term is then one chunk a P and two.
//
// Beyond the terms, 16 MiB and an eighth for what the bullet does not
// count (the runtime's own, the encoder's caches, gzip's state, track
// names).
func memoryBound(c *Config, run time.Duration, idle bool) (int64, string) {
	const (
		chunk        = 64 << 10
		reserve      = 2 * chunk
		tokenBlock   = 192 << 10
		tokenPerHeld = 48
		batch        = 256 << 10
		batches      = 8
		rotationB    = 100
		openSpan     = 220
		argSlot      = 32
		slotsPerSpan = 2 // the id arg, and a Stringer or a status
	)
	procs := int64(c.Procs)
	var sum, chunksAll, heldAll int64
	for _, t := range c.Tracers {
		held := heldAtOnce(t, run)
		heldAll += held
		limit := int64(t.BufferLimit)
		if limit == 0 {
			limit = tracer.DefaultBufferLimit
		}
		chunks := max(limit, (procs+2)*chunk)
		if idle {
			chunks = (procs + 2) * chunk
		}
		chunksAll += chunks
		sum += chunks + reserve + procs*tokenBlock + tokenPerHeld*held + batches*batch + held*(openSpan+argSlot*slotsPerSpan)
		if t.Sink.rotates() {
			sum += rotationB * held
		}
		if t.Sink == sinkFlight {
			w := int64(t.FlightBytes)
			if w == 0 {
				w = tracer.DefaultFlightRecorderBytes
			}
			sum += w
			if !idle { // no dump is taken while idle
				sum += w
			}
		}
	}
	slack := int64(16<<20) + sum/8
	return sum + slack, fmt.Sprintf("%d tracers, %d Ps, %d spans held at most, chunks %d MiB, slack %d MiB",
		len(c.Tracers), procs, heldAll, chunksAll>>20, slack>>20)
}

// fillable is how much of the bound the tracers of c may fill while the
// workload runs: the buffers beyond a chunk a P, and flight windows.
func fillable(c *Config) int64 {
	busy, _ := memoryBound(c, 0, false)
	idle, _ := memoryBound(c, 0, true)
	return busy - idle
}

// heldAtOnce is the most spans the workload of t holds open at once.
func heldAtOnce(t TracerConfig, run time.Duration) int64 {
	var n int64 = 8 // the hooks' (a writer's span, a String's)
	for _, s := range t.Shapes {
		N, D := int64(s.N), int64(max(1, s.Depth))
		switch s.Kind {
		case shapePool:
			n += N * D
			if s.Held {
				n += N
			}
		case shapeServer, shapeRecursion:
			n += N * (D + 1)
		case shapeLeaker:
			// Never ended: held until Close.
			n += N + int64(float64(s.Rate)*run.Seconds()*1.2)*D
		case shapeHandles:
			n += (N + 64 + 1) * D
		case shapeAsync:
			n += N + 2
		default:
			n += N
		}
	}
	return n
}

// checkMemory checks the samples against the bound, once the workload
// stopped against the idle bound, and that the heap does not grow with
// the spans started.
func (r *run) checkMemory() {
	base := uint64(0)
	if r.result != nil {
		base = r.result.BaseHeap
	}
	r.rep.mu.Lock()
	samples := append([]sample(nil), r.rep.samples...)
	r.rep.mu.Unlock()
	for _, s := range samples {
		if s.phase == "base" {
			base = max(base, s.live)
		}
	}
	bound, terms := memoryBound(r.cfg, r.o.duration, false)
	var worst sample
	for _, s := range samples {
		if (s.phase == "run" || s.phase == "stop") && s.live > worst.live {
			worst = s
		}
	}
	if worst.live > 0 {
		r.note("memory: untraced %d MiB, traced at most %d MiB, bound %d MiB beyond the untraced (%s)", base>>20, worst.live>>20, bound>>20, terms)
		if int64(worst.live)-int64(base) > bound {
			r.fail("memory", "live heap %d MiB after %d spans started, the untraced workload's %d MiB: %d MiB more, past the bound of %d MiB (%s)%s",
				worst.live>>20, worst.started, base>>20, (worst.live-base)>>20, bound>>20, terms, r.growth(samples))
		}
	}
	if r.result != nil && r.result.IdleHeap > 0 {
		idle, terms := memoryBound(r.cfg, r.o.duration, true)
		extra := int64(r.result.IdleHeap) - int64(base)
		r.note("memory: idle after the workload, %d MiB, %d MiB beyond the untraced, bound %d MiB", r.result.IdleHeap>>20, extra>>20, idle>>20)
		if extra > idle {
			r.fail("memory", "once the workload stopped and the tracers flushed and sat idle for %v, the live heap is %d MiB, the untraced workload's %d MiB: %d MiB more, past the idle bound of %d MiB (%s)%s",
				idleWait, r.result.IdleHeap>>20, base>>20, extra>>20, idle>>20, terms, r.growth(samples))
		}
	}
	// The buffers and a flight recorder's window may fill as the run goes
	// on: only growth past what they hold is growth with the spans.
	if g, bytesPerSpan, started := fitGrowth(r.beyondHeld(samples)); g > max(32<<20, fillable(r.cfg)+16<<20) && bytesPerSpan >= 8 {
		r.fail("memory", "the live heap grew by %d MiB with the spans started (%.1f bytes a span over %d spans), beyond what the bound gives the spans held", g>>20, bytesPerSpan, started)
	}
}

// beyondHeld returns the samples less what the bound gives the spans held
// at their time: spans never ended pile up as the run goes on, and their
// memory is not growth with the spans started.
func (r *run) beyondHeld(samples []sample) []sample {
	start, _ := memoryBound(r.cfg, 0, false)
	out := make([]sample, 0, len(samples))
	for _, s := range samples {
		at := time.Duration(s.at - r.readyAt)
		if r.readyAt == 0 || at < 0 {
			at = 0
		}
		b, _ := memoryBound(r.cfg, at, false)
		s.live -= min(s.live, uint64(b-start))
		out = append(out, s)
	}
	return out
}

// growth describes how the heap grew with the spans started, for a
// failure's text.
func (r *run) growth(samples []sample) string {
	g, perSpan, started := fitGrowth(r.beyondHeld(samples))
	if started == 0 {
		return ""
	}
	return fmt.Sprintf("; over the run's last 70%%, beyond the spans held, %d MiB more for %d spans started, %.1f bytes a span", g>>20, started, perSpan)
}

// fitGrowth fits the live heap against the spans started over the run's
// samples after its first 30% (least squares), and returns the growth
// the fit gives over them, its slope in bytes a span, and the spans
// started over them.
func fitGrowth(samples []sample) (growth int64, perSpan float64, started uint64) {
	var run []sample
	for _, s := range samples {
		if s.phase == "run" {
			run = append(run, s)
		}
	}
	run = run[len(run)*3/10:]
	if len(run) < 5 {
		return 0, 0, 0
	}
	var sx, sy, sxx, sxy float64
	for _, s := range run {
		x, y := float64(s.started), float64(s.live)
		sx += x
		sy += y
		sxx += x * x
		sxy += x * y
	}
	n := float64(len(run))
	den := n*sxx - sx*sx
	if den == 0 {
		return 0, 0, 0
	}
	slope := (n*sxy - sx*sy) / den
	started = run[len(run)-1].started - run[0].started
	// The line's rise, but no more than the heap rose: buffers that fill
	// fast once (a sink that stalls for a moment) tilt the line past
	// what the heap ever held.
	var top int64
	for _, s := range run {
		top = max(top, int64(s.live))
	}
	return min(int64(slope*float64(started)), top-int64(run[0].live)), slope, started
}

// memCap is the live heap past which the parent kills the child rather
// than let it take the machine's memory: four times the bound.
func (r *run) memCap() uint64 {
	b, _ := memoryBound(r.cfg, r.o.duration, false)
	return uint64(4*b) + 256<<20
}
