package duckdb

import (
	"context"
	"database/sql"
	"fmt"
	"math"

	duck "github.com/duckdb/duckdb-go/v2"
)

// Nesting again.
//
// The Builder writes a slice once its depth is known, or, past
// MaxPending slices waiting, the oldest top-level slices as they are: a
// slice that comes later and encloses them (a program's main span, whose
// B the tracer package writes at its first flush, after the spans
// recorded before it) leaves their depth short and their parent missing.
// Parquet files stay as written; a table in DuckDB can be rewritten. So
// the tracks where such a slice came (tables.Report.Late) are nested
// again once every row is in, as the Builder nests them: by start, the
// longer first, file order last (ids are in file order), each slice in
// the innermost one that holds it (a slice beginning where another ends
// is not inside it; two of no duration at one time nest). That takes a
// sort of the track's rows in DuckDB and a stack as deep as the nesting,
// in any order of the file and whatever the distance to the late slice:
// so MaxPending bounds the memory of tracer sql without costing it
// exactness. Slices that end up deeper than the 512 levels
// trace_processor keeps are deleted, as it drops them.

// renestTable holds the new depth and parent of the rows that change.
const renestTable = "tracer_renest"

// maxDepth is the depth trace_processor drops slices at.
const maxDepth = 512

// renest nests the slices of tracks again, and returns how many it
// deleted for their depth.
func (db *DB) renest(tracks []int64) (dropped int64, err error) {
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, fmt.Sprintf("CREATE TABLE %s (id BIGINT, depth INTEGER, parent_id BIGINT)", renestTable)); err != nil {
		return 0, err
	}
	defer db.ExecContext(ctx, "DROP TABLE IF EXISTS "+renestTable)
	app, err := duck.NewAppenderFromConn(db.conn, "", renestTable)
	if err != nil {
		return 0, err
	}
	changed := 0
	for _, track := range tracks {
		n, err := db.renestTrack(ctx, app, track)
		changed += n
		if err != nil {
			app.Close()
			return 0, err
		}
	}
	if err := app.Close(); err != nil || changed == 0 {
		return 0, err
	}
	if _, err := db.ExecContext(ctx, fmt.Sprintf(`UPDATE slice SET depth = r.depth, parent_id = r.parent_id FROM %s r WHERE slice.id = r.id`, renestTable)); err != nil {
		return 0, err
	}
	res, err := db.ExecContext(ctx, fmt.Sprintf("DELETE FROM slice WHERE depth >= %d", maxDepth))
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// renestTrack nests the slices of one track again, appending to app
// those whose depth or parent changes, and returns how many.
func (db *DB) renestTrack(ctx context.Context, app *duck.Appender, track int64) (int, error) {
	rows, err := db.QueryContext(ctx, `SELECT id, ts, CASE WHEN dur < 0 THEN $1 ELSE ts + dur END AS "end", depth, parent_id
FROM slice WHERE track_id = $2 ORDER BY ts, "end" DESC, id`, int64(math.MaxInt64), track)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	type open struct{ id, start, end int64 }
	var stack []open
	changed := 0
	for rows.Next() {
		var id, start, end int64
		var depth int32
		var parent sql.NullInt64
		if err := rows.Scan(&id, &start, &end, &depth, &parent); err != nil {
			return changed, err
		}
		// The innermost open slice that holds it (see
		// tables.contains); those that do not are done with, as in
		// the Builder's forest.
		for len(stack) > 0 {
			p := stack[len(stack)-1]
			if p.start <= start && end <= p.end && (start < p.end || p.start == p.end && start == end) {
				break
			}
			stack = stack[:len(stack)-1]
		}
		var want sql.NullInt64
		if len(stack) > 0 {
			want = sql.NullInt64{Int64: stack[len(stack)-1].id, Valid: true}
		}
		if d := int32(len(stack)); d != depth || want != parent {
			var p any
			if want.Valid {
				p = want.Int64
			}
			if err := app.AppendRow(id, d, p); err != nil {
				return changed, err
			}
			changed++
		}
		stack = append(stack, open{id, start, end})
	}
	return changed, rows.Err()
}
