package main

import (
	"fmt"
	"io"
	"os"
	"time"
)

// progressMin is the smallest input that gets a progress bar: smaller
// ones are read before anyone would look at it.
const progressMin = 8 << 20

// A progress bar on standard error, redrawn at most every tenth of a
// second. A nil *progress draws nothing.
type progress struct {
	w     io.Writer
	name  string
	total int64
	done  func() int64 // bytes of the input read so far
	start time.Time
	next  time.Time
	calls int
}

// newProgress returns a progress bar for reading total bytes of name, or
// nil if stderr is not a terminal, the input is small, or quiet is set.
func newProgress(name string, total int64, quiet bool, done func() int64) *progress {
	if quiet || total < progressMin || !isTerminal(os.Stderr) {
		return nil
	}
	now := time.Now()
	return &progress{w: os.Stderr, name: name, total: total, done: done, start: now, next: now}
}

func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// tick is called once per event: it looks at the clock only every few
// thousand calls.
func (p *progress) tick() {
	if p == nil {
		return
	}
	if p.calls++; p.calls&4095 != 0 {
		return
	}
	if now := time.Now(); now.After(p.next) {
		p.next = now.Add(100 * time.Millisecond)
		p.draw(now)
	}
}

func (p *progress) draw(now time.Time) {
	const width = 30
	d := p.done()
	frac := min(1, float64(d)/float64(p.total))
	bar := make([]byte, width)
	for i := range bar {
		bar[i] = ' '
		if float64(i) < frac*width {
			bar[i] = '#'
		}
	}
	rate := float64(d) / max(now.Sub(p.start).Seconds(), 1e-3) / (1 << 20)
	fmt.Fprintf(p.w, "\r%s [%s] %3.0f%% %d/%d MiB %.0f MiB/s ", p.name, bar, 100*frac, d>>20, p.total>>20, rate)
}

// finish erases the bar.
func (p *progress) finish() {
	if p == nil {
		return
	}
	fmt.Fprintf(p.w, "\r%*s\r", len(p.name)+80, "")
}
