// Package streamorder is the stream-ordered free-list machinery shared by
// core's pool, fixed-size and arena resources (docs/sub-allocators.md
// explains the design); an Engine holds one resource's lists.
//
// Free memory is kept in lists. Each list belongs to one stream and one
// shard; the shard is picked from the P (Go's logical processor) the
// calling goroutine runs on, so goroutines running at the same time use
// different lists and different locks. A list has its own mutex, held only
// for the few nanoseconds an allocation or a free takes. The resource
// defines what a list holds (blocks of a heap, fixed-size blocks,
// superblocks): its list type embeds List, which the engine manages.
//
// Memory freed on stream S is usable at once by later work on S, so an
// allocation on S takes it from any of S's lists without further ado, and a
// free records nothing. Another stream T may use it only once T is ordered
// after the free, and the engine never touches a stream handle after the
// call that passed it has returned, because the caller may destroy the
// stream at any time after freeing memory on it (RMM allows that) and a
// destroyed stream's handle is a dangling pointer that CUDA may even hand
// out again for a new stream. So:
//
//   - The legacy default stream (0 and cudaStreamLegacy) cannot be
//     destroyed: T records its event on it lazily, when it first takes
//     memory freed on it that no record covers yet, and waits on it.
//   - Every other stream (created streams, and cudaStreamPerThread, which
//     names a different stream on each thread and cannot be recorded on from
//     another) is recorded on only during a call the caller makes on it. When
//     T wants memory freed on S, it marks S wanted; S's next call records
//     S's event (covering every free on S so far) and moves S's free blocks
//     to the settled part of its lists, where T takes them after waiting on
//     the event. A record costs a few microseconds, so it happens only when
//     another stream has asked for S's memory since S's last record.
//   - When nothing ordered is left and the resource cannot grow, a device
//     synchronization makes every block freed before it safe for every
//     stream (SyncMarks, ApplySync).
//
// Streams are known by their CUDA stream id (cudaStreamGetId, asked during
// the caller's call), never by handle: memory freed on a destroyed stream
// must not pass unordered to a new stream that got the same handle.
//
// The engine is generic over the resource's list type, so that the
// resource's hot paths call it without an interface call and its small
// methods inline into them.
package streamorder
