package duckdb

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	duck "github.com/duckdb/duckdb-go/v2"
)

// The output formats of Query.
const (
	FormatTable = "table" // columns aligned, for a terminal
	FormatCSV   = "csv"
	FormatJSON  = "json" // an array of objects, one per row
)

// Query runs query and writes its result to w in format.
func (db *DB) Query(w io.Writer, query, format string) error {
	if format != FormatTable && format != FormatCSV && format != FormatJSON {
		return fmt.Errorf("unknown format %q: table, csv or json", format)
	}
	rows, err := db.DB.Query(query)
	if err != nil {
		return err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return err
	}
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	var out writer
	switch format {
	case FormatTable:
		out = newTableWriter(w, cols)
	case FormatCSV:
		out = newCSVWriter(w, cols)
	default:
		out = &jsonWriter{w: w, cols: cols}
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return err
		}
		if err := out.row(vals); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	return out.close()
}

type writer interface {
	row([]any) error
	close() error
}

// text formats a value for the table and CSV outputs; NULL is empty.
func text(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case []byte:
		return string(v)
	case string:
		return v
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64)
	case time.Time:
		return v.Format(time.RFC3339Nano)
	}
	return fmt.Sprint(v)
}

type tableWriter struct {
	tw  *tabwriter.Writer
	buf []string
}

func newTableWriter(w io.Writer, cols []string) *tableWriter {
	t := &tableWriter{tw: tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)}
	fmt.Fprintln(t.tw, strings.Join(cols, "\t"))
	return t
}

func (t *tableWriter) row(vals []any) error {
	t.buf = t.buf[:0]
	for _, v := range vals {
		// A tab or newline in a value would break the alignment.
		t.buf = append(t.buf, strings.NewReplacer("\t", " ", "\n", " ").Replace(text(v)))
	}
	_, err := fmt.Fprintln(t.tw, strings.Join(t.buf, "\t"))
	return err
}

func (t *tableWriter) close() error { return t.tw.Flush() }

type csvWriter struct {
	w   *csv.Writer
	buf []string
}

func newCSVWriter(w io.Writer, cols []string) *csvWriter {
	c := &csvWriter{w: csv.NewWriter(w)}
	c.w.Write(cols)
	return c
}

func (c *csvWriter) row(vals []any) error {
	c.buf = c.buf[:0]
	for _, v := range vals {
		c.buf = append(c.buf, text(v))
	}
	return c.w.Write(c.buf)
}

func (c *csvWriter) close() error {
	c.w.Flush()
	return c.w.Error()
}

type jsonWriter struct {
	w    io.Writer
	cols []string
	n    int
}

func (j *jsonWriter) row(vals []any) error {
	sep := ",\n"
	if j.n == 0 {
		sep = "[\n"
	}
	j.n++
	b := []byte(sep + "{")
	for i, v := range vals {
		if i > 0 {
			b = append(b, ',')
		}
		k, _ := json.Marshal(j.cols[i])
		b = append(b, k...)
		b = append(b, ':')
		switch x := v.(type) {
		case []byte:
			v = string(x)
		case duck.Decimal:
			v = json.Number(x.String()) // exactly, not as a struct
		}
		val, err := json.Marshal(v)
		if err != nil {
			val, _ = json.Marshal(fmt.Sprint(v)) // a DuckDB type JSON has no form for
		}
		b = append(b, val...)
	}
	b = append(b, '}')
	_, err := j.w.Write(b)
	return err
}

func (j *jsonWriter) close() error {
	end := "\n]\n"
	if j.n == 0 {
		end = "[]\n"
	}
	_, err := io.WriteString(j.w, end)
	return err
}
