package fastpath

// Counter is a statistics counter as the hot part keeps it: a current
// value, its peak and its running total. core.Counter, what users read, has
// the same fields, so the two convert into each other.
type Counter struct {
	Value int64 // current
	Peak  int64 // highest Value seen
	Total int64 // sum of all increments
}

// add counts an increment of n (n >= 0).
func (c *Counter) add(n int64) {
	c.Value += n
	c.Total += n
	if c.Value > c.Peak {
		c.Peak = c.Value
	}
}

// StatisticsHot is the part of a statistics adaptor every call changes:
// the innermost level's counters, and the bytes and allocations
// outstanding through the adaptor, every level together (what a
// deallocation is checked against). The C ABI's thread cache keeps a copy
// of this layout in C memory (capi's rmmgo_tc_hot; a test checks they
// agree).
type StatisticsHot struct {
	Bytes, Count Counter
	OutBytes     uintptr
	OutCount     int64
}

// Alloc counts an allocation of bytes in h.
func (h *StatisticsHot) Alloc(bytes uintptr) {
	h.Bytes.add(int64(bytes))
	h.Count.add(1)
	h.OutBytes += bytes
	h.OutCount++
}

// Free takes a deallocation of bytes off h, unless more bytes or more
// allocations than are outstanding would go (false then, nothing
// changed).
func (h *StatisticsHot) Free(bytes uintptr) bool {
	if h.OutCount < 1 || h.OutBytes < bytes {
		return false
	}
	h.Bytes.Value -= int64(bytes)
	h.Count.Value--
	h.OutBytes -= bytes
	h.OutCount--
	return true
}

// FreeForeign counts a deallocation of bytes that the adaptor did not see
// allocated but its upstream freed (RMM's "negative inner tracking": memory
// allocated through an outer adaptor freed through this one). The counters'
// values go down, below zero if need be, as RMM's; the outstanding figures
// that guard Free go down as far as they can.
func (h *StatisticsHot) FreeForeign(bytes uintptr) {
	h.Bytes.Value -= int64(bytes)
	h.Count.Value--
	h.OutBytes -= min(h.OutBytes, bytes)
	h.OutCount = max(h.OutCount-1, 0)
}

// Unfree undoes Free for a deallocation the upstream refused. Totals
// are not touched (deallocations never add to them); a peak is raised if
// allocations made meanwhile, with the refused memory still live, went
// past it.
func (h *StatisticsHot) Unfree(bytes uintptr) {
	h.Bytes.Value += int64(bytes)
	h.Bytes.Peak = max(h.Bytes.Peak, h.Bytes.Value)
	h.Count.Value++
	h.Count.Peak = max(h.Count.Peak, h.Count.Value)
	h.OutBytes += bytes
	h.OutCount++
}

// StatisticsStore keeps a statistics adaptor's StatisticsHot for a front
// that counts the adaptor's calls itself: Update runs fn on it atomically
// with the front's own counting (which must do what Alloc and Free do).
// fn is short and calls nothing.
type StatisticsStore interface {
	Update(fn func(h *StatisticsHot))
}
