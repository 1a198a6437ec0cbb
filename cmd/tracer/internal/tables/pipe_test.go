package tables

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPipe checks that a Pipe writes every row once, in order, and
// stops at the writer's first error, which Add or Close returns.
func TestPipe(t *testing.T) {
	for _, tc := range []struct {
		name    string
		rows    int
		failAt  int // the batch that fails, from 1; 0 never
		wantErr bool
	}{
		{"empty", 0, 0, false},
		{"one row", 1, 0, false},
		{"batches and a rest", 3*PipeBatch + 7, 0, false},
		{"first batch fails", 3 * PipeBatch, 1, true},
		{"last batch fails", 2*PipeBatch + 1, 3, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []int
			batches := 0
			fail := errors.New("disk full")
			p := NewPipe(func(rows []int) error {
				batches++
				if batches == tc.failAt {
					return fail
				}
				got = append(got, rows...)
				return nil
			})
			var err error
			for i := range tc.rows {
				if err = p.Add(&i); err != nil {
					break
				}
			}
			err = errors.Join(err, p.Close())
			if tc.wantErr {
				require.ErrorIs(t, err, fail)
				return
			}
			require.NoError(t, err)
			require.Len(t, got, tc.rows)
			for i, v := range got {
				assert.Equal(t, i, v)
			}
		})
	}
}
