package duckdb

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

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
// is not inside it; two of no duration at one time nest). (At one start,
// the Builder also takes an X before a B of the same extent, and a slice
// of no duration before a B it came before in the file, as
// trace_processor's sort does; a row does not say whether it was an X
// or a B, so on a track nested again those ties may nest otherwise.) That takes a
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
	var changed int
	err = db.slices.Raw(func(conn any) (err error) {
		changed, err = renestTracks(ctx, conn.(driver.QueryerContext), app, tracks)
		return err
	})
	if err = errors.Join(err, app.Close()); err != nil || changed == 0 {
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

// renestTracks nests the slices of tracks again, appending to app those
// whose depth or parent changes, and returns how many. One query on conn
// sorts the rows of all the tracks (one per track scanned the table each
// time: a fifth of sql's time on a Chromium trace of 32 such tracks),
// read through the driver (database/sql's Scan cost as much as the
// read).
func renestTracks(ctx context.Context, conn driver.QueryerContext, app *duck.Appender, tracks []int64) (int, error) {
	ids := make([]string, len(tracks))
	for i, t := range tracks {
		ids[i] = strconv.FormatInt(t, 10)
	}
	q := fmt.Sprintf(`SELECT track_id, id, ts, CASE WHEN dur < 0 THEN %d ELSE ts + dur END AS "end", depth, parent_id
FROM slice WHERE track_id IN (%s) ORDER BY track_id, ts, "end" DESC, id`, int64(math.MaxInt64), strings.Join(ids, ","))
	rows, err := conn.QueryContext(ctx, q, nil)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	type open struct{ id, start, end int64 }
	var stack []open
	changed := 0
	track := int64(-1)
	row := make([]driver.Value, 6)
	for {
		if err := rows.Next(row); err == io.EOF {
			return changed, nil
		} else if err != nil {
			return changed, err
		}
		if t := row[0].(int64); t != track {
			track, stack = t, stack[:0]
		}
		id, start, end, depth := row[1].(int64), row[2].(int64), row[3].(int64), row[4].(int32)
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
		var want any
		if len(stack) > 0 {
			want = stack[len(stack)-1].id
		}
		if d := int32(len(stack)); d != depth || want != row[5] {
			if err := app.AppendRow(id, d, want); err != nil {
				return changed, err
			}
			changed++
		}
		stack = append(stack, open{id, start, end})
	}
}
