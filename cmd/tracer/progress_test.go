package main

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestProgress(t *testing.T) {
	t.Parallel()
	// Under go test, standard error is not a terminal: no bar, whatever
	// the size; nor for a small input, nor with -q.
	assert.Nil(t, newProgress("f", 1<<30, false, nil))
	assert.Nil(t, newProgress("f", 1<<30, true, nil))
	assert.Nil(t, newProgress("f", 1<<10, false, nil))
	var nilBar *progress
	nilBar.tick()
	nilBar.finish()

	var out bytes.Buffer
	done := int64(0)
	p := &progress{w: &out, name: "trace.json", total: 100 << 20, done: func() int64 { return done }, start: time.Now().Add(-time.Second)}
	done = 50 << 20
	p.draw(time.Now())
	assert.Regexp(t, `^\rtrace.json \[#{15} {15}\]  50% 50/100 MiB \d+ MiB/s $`, out.String())
	out.Reset()
	p.finish()
	assert.Regexp(t, `^\r +\r$`, out.String())
}
