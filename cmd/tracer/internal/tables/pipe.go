package tables

// PipeBatch is how many rows a Pipe hands over at once.
const PipeBatch = 4096

// A Pipe hands rows, in batches, to a write function that runs on a
// goroutine of its own: a Sink's encoding of rows (Parquet's, DuckDB's
// appender) then takes the second CPU while the Builder reads the trace
// on the first, and they take about as long.
type Pipe[T any] struct {
	write func([]T) error
	rows  []T
	full  chan []T // batches to write
	free  chan []T // batches written, to reuse
	done  chan error
	err   error // the writer's, once it stopped early
}

// NewPipe starts the goroutine that calls write with each batch, in
// order; it stops at the first error, which Add or Close returns.
func NewPipe[T any](write func([]T) error) *Pipe[T] {
	p := &Pipe[T]{
		write: write,
		rows:  make([]T, 0, PipeBatch),
		full:  make(chan []T, 1),
		free:  make(chan []T, 2),
		done:  make(chan error, 1),
	}
	p.free <- make([]T, 0, PipeBatch)
	go p.writer()
	return p
}

func (p *Pipe[T]) writer() {
	for rows := range p.full {
		if err := p.write(rows); err != nil {
			p.done <- err
			for range p.full {
			}
			return
		}
		clear(rows) // the strings it held
		p.free <- rows[:0]
	}
	p.done <- nil
}

// Add copies r into the current batch, handing it over when full.
func (p *Pipe[T]) Add(r *T) error {
	p.rows = append(p.rows, *r)
	if len(p.rows) == PipeBatch {
		return p.flush()
	}
	return nil
}

func (p *Pipe[T]) flush() error {
	if p.err != nil {
		return p.err
	}
	if len(p.rows) == 0 {
		return nil
	}
	select {
	case p.err = <-p.done:
		return p.err
	case p.full <- p.rows:
	}
	select {
	case p.err = <-p.done:
		return p.err
	case p.rows = <-p.free:
	}
	return nil
}

// Close hands over the last rows and waits for the writer to finish;
// it returns the first error of Add or of write.
func (p *Pipe[T]) Close() error {
	err := p.flush()
	close(p.full)
	if p.err == nil {
		err = <-p.done
	}
	return err
}
