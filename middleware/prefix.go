package middleware

import (
	"slices"
	"sort"
	"strings"
)

// prefixEntry is one prefix and its value, for newPrefixSet.
type prefixEntry[V any] struct {
	prefix string
	v      V
}

// prefixSet finds the prefixes of a string among many in O(log n) string
// comparisons plus one per matching prefix, instead of one per prefix:
// the prefixes are sorted, and each knows the longest other prefix that
// is a prefix of it (its parent). The greatest prefix not above s in
// sorted order starts with the longest prefix of s, if any (any string
// between that prefix and s in byte order starts with it), so walking up
// the parents from it reaches the longest prefix of s first, and then
// every shorter one.
type prefixSet[V any] struct {
	keys   []string // sorted, unique
	vals   [][]V    // the values of keys[i], in the order given
	parent []int    // index of the longest proper prefix of keys[i] in keys, or -1
}

// newPrefixSet builds the set of es; values of an equal prefix are kept
// together, in the order given.
func newPrefixSet[V any](es []prefixEntry[V]) prefixSet[V] {
	es = slices.Clone(es)
	slices.SortStableFunc(es, func(a, b prefixEntry[V]) int { return strings.Compare(a.prefix, b.prefix) })
	var ps prefixSet[V]
	var stack []int
	for _, e := range es {
		if n := len(ps.keys); n > 0 && ps.keys[n-1] == e.prefix {
			ps.vals[n-1] = append(ps.vals[n-1], e.v)
			continue
		}
		i := len(ps.keys)
		for len(stack) > 0 && !strings.HasPrefix(e.prefix, ps.keys[stack[len(stack)-1]]) {
			stack = stack[:len(stack)-1]
		}
		parent := -1
		if len(stack) > 0 {
			parent = stack[len(stack)-1]
		}
		ps.keys = append(ps.keys, e.prefix)
		ps.vals = append(ps.vals, []V{e.v})
		ps.parent = append(ps.parent, parent)
		stack = append(stack, i)
	}
	return ps
}

// find returns the index of the longest key that is a prefix of s, or -1.
func (ps *prefixSet[V]) find(s string) int {
	j := sort.Search(len(ps.keys), func(i int) bool { return ps.keys[i] > s }) - 1
	for j >= 0 && !strings.HasPrefix(s, ps.keys[j]) {
		j = ps.parent[j]
	}
	return j
}

// longest returns the first value of the longest key that is a prefix of
// s.
func (ps *prefixSet[V]) longest(s string) (V, bool) {
	if j := ps.find(s); j >= 0 {
		return ps.vals[j][0], true
	}
	var zero V
	return zero, false
}

// each calls fn with the values of every key that is a prefix of s,
// longest first.
func (ps *prefixSet[V]) each(s string, fn func(V)) {
	for j := ps.find(s); j >= 0; j = ps.parent[j] {
		for _, v := range ps.vals[j] {
			fn(v)
		}
	}
}
