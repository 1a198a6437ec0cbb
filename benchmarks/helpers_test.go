package benchmarks

import (
	"os"
	"strings"
	"testing"
)

// sanitize turns a benchmark name into a file name.
func sanitize(name string) string {
	return strings.NewReplacer("/", "_", "=", "-", " ", "_").Replace(name)
}

func removeQuietly(path string) { os.Remove(path) }

// reportDropped adds the dropped/op metric: the share of events a peer
// refused because its buffers were full.
func reportDropped(b *testing.B, dropped uint64) {
	b.ReportMetric(float64(dropped)/float64(b.N), "dropped/op")
}

// intLoop runs op b.N times, passing the iteration number.
func intLoop(b *testing.B, op func(int)) {
	for i := 0; i < b.N; i++ {
		op(i)
	}
}

// intParallel runs op under b.RunParallel, passing each goroutine's own
// iteration number.
func intParallel(b *testing.B, op func(int)) {
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			op(i)
			i++
		}
	})
}
