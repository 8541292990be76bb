// Package asyncpath is the C path of the pool-based resources (cuda_async,
// cuda_async_managed, cuda_async_view): what an allocation and a free of
// theirs must do, written once in C so that C callers (the C ABI's
// rmm_allocate and rmm_deallocate) run it with no Go on the path, and Go
// callers (core's Allocate and Deallocate) run the same code through one cgo
// call.
//
// It holds three things (asyncpath.c):
//
//   - The table of blocks: every block a pool-based resource handed out,
//     with the size asked for, its pool, and whether the pool's owner handed
//     it out. It is the only record of those blocks, for every path: a free
//     from C of a block Go allocated (or the other way round) finds it.
//     Sharded, one spinlock per shard.
//   - A resource's state (State): its pool, its device, how to call the
//     runtime (the CUDA runtime's own functions, which cudart resolved, or
//     Go callbacks for any other runtime: the simulated device, a test's
//     wrapper), and a word holding its generation and whether it is closed.
//     States live in C memory that is never given back; a closed state is
//     reused with the next generation, so a caller holding a stale pair
//     (state, generation) reads valid memory and is refused.
//   - The gate Close waits on: each calling thread has a record, on its own
//     cache line, naming the state it is inside. A call writes its record
//     and then reads the state's word; Close writes the word and then reads
//     every record. Both are sequentially consistent: a call either sees
//     Close and backs out, or Close sees the call and waits for it.
//
// An allocation is: the gate, the device check (the resource's device must
// be current: one cudaGetDevice), cudaMallocFromPoolAsync, the record. A
// free is: the gate, the record taken out if it matches (pointer, size,
// pool), cudaFreeAsync, the record put back if that fails. Anything else
// (a closed resource, a wrong device, a runtime error, a free the record
// refuses) returns a Result and leaves the message to the Go side, which
// runs the call again on its slow path and reports it.
package asyncpath
