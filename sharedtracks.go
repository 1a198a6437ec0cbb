package tracer

import (
	"fmt"
)

// Shared tracks: goroutines drawn on lanes.
//
// By default every goroutine is a track of its own. A server that runs a
// goroutine per request then shows thousands of one-slice tracks, and
// "what was in flight at 12.3 s" has no answer on screen. With WithLanes,
// goroutines are drawn the way a thread pool is: on a bounded set of
// tracks, the lanes of their group, reused. A goroutine takes the first
// free lane of its group when its first span starts and gives it back when
// its last span ends, so a group has as many lanes as it had goroutines
// inside a span at once, and nesting stays exact on each lane. Every event
// a goroutine records while it holds a lane is drawn there; an event
// outside any span (an instant, a flow step) is drawn on a free lane of
// the group at that moment. Each slice keeps its goroutine id in its args
// ("goroutine").
//
// A goroutine's group is its name (SetGoroutineName), if it has one, and
// otherwise the name of the event that made it take a lane: its first
// span, usually. A lane is named after its group, "GROUP" for the first
// and "GROUP (2)" and so on for the others, and sorted with it.
//
// It all happens in the flusher, which sees each goroutine's events in the
// order they were recorded: the record path costs what it always does.
// The flusher knows which spans are open (see openspans.go): a goroutine
// holds its lane while its stack of open spans is not empty. A span that
// the flusher writes whole as soon as it sees its start (its end was the
// next event of its lane, see take) keeps its lane busy until it ends, so
// that no other goroutine's span starts on the lane inside it.

// maxLaneGroups bounds the groups: span names made of ids ("request 123")
// would make a group, and a lane, per goroutine. Past it, goroutines share
// the group otherGroup.
const maxLaneGroups = 4096

// otherGroup is the group of goroutines past maxLaneGroups.
const otherGroup = "other goroutines"

// A sharedTrack is one lane: a track that goroutines of one group take in
// turn.
type sharedTrack struct {
	tid       uint64
	group     *laneGroup
	index     int   // 1 for a group's first lane
	held      bool  // by a goroutine with an open span
	busyUntil int64 // a span written whole lasts until then
}

// A laneGroup is the lanes of one group.
type laneGroup struct {
	name  string
	order int            // creation order among groups
	lanes int            // lanes made so far
	free  []*sharedTrack // free lanes, most recently freed last
}

// sharedTracks assigns goroutines to lanes for the flusher, and tells the
// encoder which lane a goroutine's events go to.
type sharedTracks struct {
	held    map[uint64]*sharedTrack // goroutine → the lane it holds
	names   map[uint64]string       // goroutine → its name, for its group
	groups  map[string]*laneGroup
	nextTid uint64

	lastGroup *laneGroup // the group last taken from: a tight loop's
	lastAt    int64      // the time of the latest event seen, for events out of turn

	unnamed []laneName  // lanes made, whose names are yet to be written
	files   *trackNames // remembers lane names for rotated files and dumps, if not nil
}

func newSharedTracks(files *trackNames) *sharedTracks {
	return &sharedTracks{
		held:   map[uint64]*sharedTrack{},
		names:  map[uint64]string{},
		groups: map[string]*laneGroup{},
		files:  files,
	}
}

// setName remembers goroutine gid's name, its group from its next lane on.
func (s *sharedTracks) setName(gid uint64, name string) {
	if len(s.names) >= maxTrackNames {
		// Forget the names of goroutines that hold no lane: a name
		// matters only when its goroutine takes one.
		for g := range s.names {
			if s.held[g] == nil {
				delete(s.names, g)
			}
		}
	}
	s.names[gid] = name
}

// acquire gives goroutine gid, which holds no lane, a free lane of its
// group at time at; event names the event it takes it for.
func (s *sharedTracks) acquire(gid uint64, event string, at int64) *sharedTrack {
	tr := s.take(gid, event, at)
	s.held[gid] = tr
	return tr
}

// take finds a free lane of gid's group at time at, for an event named
// event, and marks it held; the caller gives it back with give.
func (s *sharedTracks) take(gid uint64, event string, at int64) *sharedTrack {
	s.lastAt = max(s.lastAt, at)
	name := event
	if len(s.names) > 0 {
		if n, ok := s.names[gid]; ok {
			name = n
		}
	}
	g := s.lastGroup
	if g == nil || g.name != name {
		g = s.group(name)
		s.lastGroup = g
	}
	// Any free lane will do: taking lanes in the order spans start, a new
	// one is made only when every lane is busy, so a group has as many
	// lanes as it had spans open at once. The most recently freed is the
	// likeliest free one.
	var tr *sharedTrack
	for i := len(g.free) - 1; i >= 0; i-- {
		if l := g.free[i]; l.busyUntil <= at {
			tr = l
			g.free = append(g.free[:i], g.free[i+1:]...)
			break
		}
	}
	if tr == nil {
		tr = s.newLane(g)
	}
	tr.held = true
	return tr
}

// group returns the group named name, made if need be.
func (s *sharedTracks) group(name string) *laneGroup {
	g := s.groups[name]
	if g == nil {
		if len(s.groups) >= maxLaneGroups {
			name = otherGroup
			g = s.groups[name]
		}
		if g == nil {
			g = &laneGroup{name: name, order: len(s.groups)}
			s.groups[name] = g
		}
	}
	return g
}

// give gives back a lane taken with take, busy until at at least.
func (s *sharedTracks) give(tr *sharedTrack, at int64) {
	s.lastAt = max(s.lastAt, at)
	tr.held = false
	tr.busyUntil = max(tr.busyUntil, at)
	tr.group.free = append(tr.group.free, tr)
}

// newLane makes the next lane of g and writes its name.
func (s *sharedTracks) newLane(g *laneGroup) *sharedTrack {
	s.nextTid++
	g.lanes++
	tr := &sharedTrack{tid: s.nextTid, group: g, index: g.lanes}
	tn := trackName{name: g.name, hasName: true, sort: int64(g.order)<<20 | int64(min(g.lanes, 1<<20-1)), hasSort: true}
	if g.lanes > 1 {
		tn.name = fmt.Sprintf("%s (%d)", g.name, g.lanes)
	}
	s.unnamed = append(s.unnamed, laneName{tr.tid, tn})
	if s.files != nil {
		s.files.adopt(tr.tid, tn)
	}
	return tr
}

// A laneName is the name of a new lane, to write.
type laneName struct {
	tid uint64
	tn  trackName
}

// forgetUnnamed forgets the lanes not named yet: a flight recorder's dump
// names every lane it remembers instead.
func (s *sharedTracks) forgetUnnamed() { s.unnamed = s.unnamed[:0] }

// forUnnamed calls f with each lane made since the last call and its
// name, and forgets them: they are written at the end of a batch (events
// are written one at a time, and a lane may be made while one is).
func (s *sharedTracks) forUnnamed(f func(tid uint64, tn *trackName)) {
	for i := range s.unnamed {
		f(s.unnamed[i].tid, &s.unnamed[i].tn)
	}
	s.unnamed = s.unnamed[:0]
}

// release gives back gid's lane, busy until at at least.
func (s *sharedTracks) release(gid uint64, at int64) {
	if tr := s.held[gid]; tr != nil {
		delete(s.held, gid)
		s.give(tr, at)
	}
}

// abandon takes gid's lane away from it for good: its spans were
// forgotten (see maxOpenSpans), and their B events, if written, last to
// the end of the trace on that lane, so no one else may use it.
func (s *sharedTracks) abandon(gid uint64) {
	delete(s.held, gid)
}

// momentary returns the lane an event of goroutine gid named event, at
// time at and lasting until end, is drawn on: the lane gid holds, or else
// a free lane of its group, taken for the event alone. It returns nil for
// the lane held, else the lane taken, to give back (see give) once the
// event is written on it.
func (s *sharedTracks) momentary(gid uint64, event string, at int64) *sharedTrack {
	if len(s.held) > 0 {
		if tr := s.held[gid]; tr != nil {
			return nil
		}
	}
	return s.take(gid, event, at)
}

// tid returns the track goroutine gid's event goes to: the lane it holds.
// An event written out of turn, when its goroutine holds none (an end
// written again after a failed write), goes to a free lane of its group.
func (s *sharedTracks) tid(gid uint64) uint64 {
	if tr := s.held[gid]; tr != nil {
		return tr.tid
	}
	tr := s.take(gid, "goroutines", s.lastAt)
	s.give(tr, s.lastAt)
	return tr.tid
}
