//go:build linux

package core_test

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/rmmgo/rmmgo/bench/workload"
)

// BenchmarkRandomAllocationsCPU runs BenchmarkRandomAllocations' small and
// medium cases for the sub-allocators and reports, beside wall time per
// operation, the process's CPU time (user and system, every thread) per
// operation. On a shared machine other processes stretch the wall time of
// a run far more than its CPU time, so A/B comparisons there should look
// at both. With one goroutine cpu-ns/op is close to the time an operation
// takes; with more it is the CPU spent per operation, whatever the
// parallelism.
func BenchmarkRandomAllocationsCPU(b *testing.B) {
	for _, c := range []workload.Case{workload.Small, workload.Medium} {
		for _, br := range benchResources {
			if br.name != "pool" && br.name != "binning" && br.name != "fixed_size" && br.name != "arena" {
				continue
			}
			for _, g := range []int{1, 4, 16} {
				b.Run(fmt.Sprintf("%s/%s/goroutines=%d", c.Name, br.name, g), func(b *testing.B) {
					maxUsage := maxUsageFor(b, g)
					r, _, done := br.make(b, c, maxUsage*uintptr(g))
					defer done()
					plans := make([]*workload.Plan, g)
					for i := range plans {
						plans[i] = workload.NewPlan(c, maxUsage, workload.DefaultSeed+uint64(i))
					}
					// Untimed first run, as in benchRandomOn: the resource
					// grows to what the workload needs.
					if _, _, err := workload.RunParallel(r, plans, nil); err != nil {
						b.Fatal(err)
					}
					var ops int
					var cpu time.Duration
					b.ResetTimer()
					for i := 0; i < b.N; i++ {
						c0 := processCPU(b)
						res, _, err := workload.RunParallel(r, plans, nil)
						cpu += processCPU(b) - c0
						if err != nil {
							b.Fatal(err)
						}
						ops += res.Ops
					}
					b.StopTimer()
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(ops), "ns/op")
					b.ReportMetric(float64(cpu.Nanoseconds())/float64(ops), "cpu-ns/op")
				})
			}
		}
	}
}

// processCPU returns the user and system CPU time the process has used.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
