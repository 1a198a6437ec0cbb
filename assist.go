package tracer

// Keeping up.
//
// A CPU-bound program keeps the flusher goroutine waiting in a run queue
// for a time slice of the scheduler (10ms, more with more runnable
// goroutines), and a tight loop fills megabytes of buffer in that time. So
// the goroutines that record help, the way allocating goroutines assist
// the garbage collector:
//
//   - When a second sealed chunk waits, the P that sealed it wakes the
//     flusher, which encodes on an idle core if there is one. (One waiting
//     chunk is no backlog: waking the flusher for each costs a futex call
//     and makes it encode in small pieces.)
//   - When assistChunks sealed chunks wait and no flush is under way, the
//     recording goroutine encodes them itself, on its own core, where the
//     records are still in cache. It only encodes: the encoded batches go
//     to the writer goroutine through a bounded queue (writer.go), so
//     recording never makes a write(2) itself.
//   - When the buffers are at their limit (WithBufferLimit), a recording
//     goroutine encodes if it can and otherwise waits for the writer or
//     the encoder to free a chunk. Waiting parks the goroutine, which gives
//     its P to the writer or the flusher if they were starved of one.
//   - The buffers have a soft mark below the limit (softChunks). Past it
//     they grow only while the sink is behind (writer.behind); while it
//     keeps up, recording waits at the mark as it would at the limit. A
//     loop that records faster than one core encodes then waits for the
//     encoder sooner, where it would fill the buffers with fresh memory
//     (a page fault each 4 KiB, the records read back from RAM rather
//     than cache) and leave a larger backlog to Close. That is 4 MiB of
//     buffers where there were 32, and a short traced program ends
//     sooner (docs/performance.md has the figures); the memory past the
//     mark is what absorbs a sink that is slow.
//
// Events are dropped only when the buffers are full and the sink is
// stalled: a write has not returned for stallAfter. In lossless mode
// (WithLossless) they are never dropped: recording waits for the sink
// however long it takes, until Close.

// assistChunks is how many sealed chunks may wait for the flusher before a
// recording goroutine encodes them itself: 512 KiB of records, about 8k
// spans, still in the core's cache.
const assistChunks = 8

// softChunks is the buffers' soft mark, in chunks: 4 MiB, or four chunks
// a chain with many Ps, and never above the limit.
func softChunks(limit, lanes int) int { return min(limit, max(4<<20/chunkBytes, 4*lanes)) }

// wakeChunks is how many sealed chunks wait before the flusher is woken.
const wakeChunks = 2

// helper is the flusher as the record path sees it. An interface, so that
// the record path, below the flusher, does not reach into it; it is called
// once per chunk, never per event.
type helper interface {
	assist()           // encodes what it can, unless a pass is under way
	sinkBehind() bool  // the sink is slower than the encoder now
	sinkStalled() bool // a write has not returned for stallAfter
	isClosed() bool    // Close's last pass is over: see keepEnd
}

// sealed is called by the goroutine that sealed chunk c of a chain.
func (r *recorder) sealed(*chunk) {
	n := r.waiting.Inc()
	if n >= wakeChunks {
		select {
		case r.wake <- struct{}{}:
		default:
		}
	}
	if n >= assistChunks {
		r.helper.assist()
	}
}

// waitForChunk returns a chunk once the buffers have room again, or nil
// if the event must be dropped: the sink is stalled (not in lossless
// mode), the tracer is closing, or the caller is one of the tracer's own
// goroutines and the reserve is used up (see reentry.go).
func (r *recorder) waitForChunk() *chunk {
	own := r.onOwnGoroutine()
	for {
		r.helper.assist()
		ch := r.progress.arm()
		if c := r.pool.get(r.chainCount(), 0, r.helper.sinkBehind()); c != nil {
			r.progress.disarm()
			return c
		}
		if own {
			// The writer or the flusher itself: waiting would wait for
			// itself (see reentry.go). Take from the reserve, or drop.
			r.progress.disarm()
			return r.pool.get(r.chainCount(), ownReserveChunks, true)
		}
		if !r.recording.Load() || (!r.lossless && r.helper.sinkStalled()) {
			r.progress.disarm()
			return nil
		}
		r.progress.wait(ch, r.stop, stallAfter/4)
	}
}
