// Package relaxed provides shared words read and written without memory
// barriers, for the sub-allocators' free lists.
//
// Every value they hold is written under a list lock, and every read whose
// result matters is ordered after that write by a lock or by the caller
// handing the memory over; the remaining reads are hints or neighbour
// checks that tolerate a stale value (a stale owner never equals the
// reader's own list). They compile to plain loads and stores, which on
// amd64 and arm64 never tear for aligned words: an atomic store would cost
// a full barrier (XCHG) several times per operation. CompareAndSwap is
// atomic. Under the race detector every operation is atomic, so that it
// checks the rest of the code.
package relaxed
