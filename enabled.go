package tracer

// Enabled reports whether the default tracer is recording, so that a
// caller can skip building what only a trace would show:
//
//	if tracer.Enabled() {
//		tracer.Instant(fmt.Sprintf("cache miss for %s", key))
//	}
//
// It costs one atomic load or two. The package-level recording calls do
// nothing when it is false, so a plain Span needs no such check.
func Enabled() bool { return loadStd().Enabled() }

// Enabled reports whether t is recording: it is not nil and Close has not
// begun.
func (t *Tracer) Enabled() bool { return t != nil && t.recording.Load() }

// CategoryEnabled reports whether the default tracer is recording the
// events of category c (a Category arg): false when tracing is off or the
// category is switched off by WithCategories or SetCategories.
//
//	var catSQL = tracer.Category("sql")
//
//	if tracer.CategoryEnabled(catSQL) {
//		defer tracer.Span("query", catSQL, tracer.String("sql", render(q)))()
//	}
func CategoryEnabled(c Arg) bool { return loadStd().CategoryEnabled(c) }

// CategoryEnabled reports whether t records the events of category c; see
// the package-level CategoryEnabled. An Arg that is not a Category counts
// as no category, which is always recorded.
func (t *Tracer) CategoryEnabled(c Arg) bool {
	if !t.Enabled() {
		return false
	}
	if c.kind != argCategory || c.num == 0 {
		return true
	}
	f := t.categories.Load()
	return f == nil || f.allows(uint16(c.num))
}

// SetCategories changes, while the program runs, which categories t
// records: only the listed ones, or all of them when called with none.
// Events already recorded are written either way.
func (t *Tracer) SetCategories(names ...string) error {
	if t == nil {
		return nil
	}
	if len(names) == 0 {
		t.setCategories(nil)
		return nil
	}
	f, err := newCategoryFilter(names)
	if err != nil {
		return err
	}
	t.setCategories(f)
	return nil
}

// SetCategories changes which categories the default tracer records; see
// (*Tracer).SetCategories. The choice is remembered: set before Start, or
// before a Stop and Start, it applies to the next default tracer too,
// unless that one is given WithCategories.
func SetCategories(names ...string) error {
	if _, err := newCategoryFilter(names); err != nil {
		return err
	}
	noteCategories(names)
	return loadStd().SetCategories(names...)
}
