package tables

import "unsafe"

// Memory.
//
// A slice waits as a node until it is written (see forest.go), and
// there is one per slice: allocated one at a time, they were most of
// the bytes an export allocated and a sixth of its time. So nodes come
// from blocks and are reused once written; the args strings and the
// parent ids rows point to come from an arena of blocks that are never
// reused (a Sink may keep a row, and its pointers, as long as it
// likes), which the collector frees once nothing points into them.

// nodeBlock is how many nodes are allocated at once.
const nodeBlock = 1024

// maxKeptChildren is the largest list of children a reused node keeps.
const maxKeptChildren = 64

// nodes hands out nodes, reusing those written.
type nodes struct {
	free  []*node
	block []node
	keep  bool // never reuse a node: for tests to compare with
}

// get returns a zeroed node.
func (p *nodes) get() *node {
	if k := len(p.free); k > 0 {
		n := p.free[k-1]
		p.free = p.free[:k-1]
		return n
	}
	if len(p.block) == 0 {
		p.block = make([]node, nodeBlock)
	}
	n := &p.block[0]
	p.block = p.block[1:]
	return n
}

// put takes back n, written: nothing may use it after.
func (p *nodes) put(n *node) {
	if p.keep {
		return
	}
	children := n.children
	clear(children)
	if cap(children) > maxKeptChildren {
		children = nil
	}
	*n = node{children: children[:0]}
	p.free = append(p.free, n)
}

// arenaBlock is the size of an arena's blocks, in bytes.
const arenaBlock = 64 << 10

// An arena holds values that rows point to, in blocks never reused.
type arena struct {
	bytes   []byte
	ints    []int64
	strings []string
}

// string returns a copy of s in the arena.
func (a *arena) string(s []byte) string {
	if len(s) == 0 {
		return ""
	}
	if len(s) > cap(a.bytes)-len(a.bytes) {
		a.bytes = make([]byte, 0, max(arenaBlock, len(s)))
	}
	at := len(a.bytes)
	a.bytes = append(a.bytes, s...)
	return unsafe.String(&a.bytes[at], len(s))
}

// int64Ptr returns a pointer to a copy of v.
func (a *arena) int64Ptr(v int64) *int64 {
	if len(a.ints) == cap(a.ints) {
		a.ints = make([]int64, 0, arenaBlock/8)
	}
	a.ints = append(a.ints, v)
	return &a.ints[len(a.ints)-1]
}

// stringPtr returns a pointer to a copy of s.
func (a *arena) stringPtr(s string) *string {
	if len(a.strings) == cap(a.strings) {
		a.strings = make([]string, 0, arenaBlock/16)
	}
	a.strings = append(a.strings, s)
	return &a.strings[len(a.strings)-1]
}
