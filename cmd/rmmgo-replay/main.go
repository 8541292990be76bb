// Command rmmgo-replay replays a memory-event log — the CSV that RMM's
// logging_resource_adaptor and rmmgo's core.Logging write — against a
// resource configuration, reports how the resource coped, and draws memory
// over time.
//
// Usage:
//
//	rmmgo-replay -f events.csv [-r pool|arena|binning|cuda|managed|cuda_async|fixed_size]
//	             [-initial SIZE] [-max SIZE] [-arena SIZE] [-block SIZE] [-blocks N]
//	             [-plot memory.png] [-log replayed.csv] [-v]
//	rmmgo-replay -generate N -f events.csv [-threads T] [-live SIZE] [-seed S] [...]
//
// The log is replayed as RMM's replay benchmark does: one worker per logged
// thread (each on an OS thread of its own), the events in the file's global
// order, allocations keyed by the logged pointer so that each free finds its
// allocation. Unlike RMM's, non-default streams in the log are kept apart:
// each becomes a real stream. Rows with "allocate failure" and zero-byte
// rows are counted, not replayed.
//
// It reports the time per allocation and free (as seen by the replaying
// thread), the peak bytes reserved from the device against the peak live
// bytes, the allocations that failed, and the allocations the log never
// freed (leaks, freed at the end). With -plot it draws live bytes, reserved
// bytes and the largest free block (for resources that can tell it) against
// the event index, as PNG, SVG or PDF by the file's extension.
//
// The backend is the process's CUDA runtime: the GPU, or the simulated
// device with RMMGO_BACKEND=simulated; the report says which. -generate
// writes a synthetic multi-threaded log first (and then replays it), so
// that the tool can be tried anywhere. See docs/replay.md.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/rmmgo/rmmgo/core"
	"github.com/rmmgo/rmmgo/core/eventlog"
	"github.com/rmmgo/rmmgo/cudart"
	_ "github.com/rmmgo/rmmgo/cudart/sim" // the simulated device, for RMMGO_BACKEND=simulated
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// sizeFlag is a byte count flag that reads "1GiB", "512MB", "0", and
// "default" (core.SizeDefault).
type sizeFlag struct{ v uintptr }

func (f *sizeFlag) String() string {
	if f == nil {
		return ""
	}
	if f.v == core.SizeDefault {
		return "default"
	}
	return formatBytes(uint64(f.v))
}

func (f *sizeFlag) Set(s string) error {
	if strings.EqualFold(strings.TrimSpace(s), "default") {
		f.v = core.SizeDefault
		return nil
	}
	n, err := cudart.ParseBytes(s)
	if err != nil {
		return err
	}
	f.v = uintptr(n)
	return nil
}

type options struct {
	file     string
	resource resourceConfig
	plot     string
	logOut   string
	verbose  bool
	gen      genConfig
}

func parseFlags(args []string, stderr io.Writer) (*options, error) {
	fs := flag.NewFlagSet("rmmgo-replay", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o := &options{}
	initial := sizeFlag{core.SizeDefault}
	maximum := sizeFlag{0}
	arena := sizeFlag{core.SizeDefault}
	block := sizeFlag{1 << 20}
	live := sizeFlag{384 << 20}
	fs.StringVar(&o.file, "f", "", "the event log (CSV) to replay; with -generate, the log to write")
	fs.StringVar(&o.resource.Name, "r", "pool", "resource: "+strings.Join(resourceNames, ", "))
	fs.Var(&initial, "initial", "pool (and binning's pool): initial size, e.g. 1GiB; 0 grows on demand; default: half the free memory")
	fs.Var(&maximum, "max", "pool: maximum size (0: none)")
	fs.Var(&arena, "arena", "arena: global arena size (default: half the free memory)")
	fs.Var(&block, "block", "fixed_size: block size")
	fs.IntVar(&o.resource.Blocks, "blocks", 128, "fixed_size: blocks fetched from the upstream at a time")
	fs.IntVar(&o.resource.BinMinExp, "bin-min", 18, "binning: smallest bin is 2^bin-min bytes")
	fs.IntVar(&o.resource.BinMaxExp, "bin-max", 22, "binning: largest bin is 2^bin-max bytes")
	fs.StringVar(&o.plot, "plot", "", "draw memory over time into this file (.png, .svg or .pdf)")
	fs.StringVar(&o.logOut, "log", "", "write the replay's own event log to this file")
	fs.BoolVar(&o.verbose, "v", false, "list every failed allocation")
	fs.IntVar(&o.gen.Events, "generate", 0, "write a synthetic log of this many events to -f, then replay it")
	fs.IntVar(&o.gen.Threads, "threads", 4, "-generate: number of threads")
	fs.Uint64Var(&o.gen.Seed, "seed", 1, "-generate: random seed")
	fs.Var(&live, "live", "-generate: the live bytes the workload peaks at")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: rmmgo-replay -f events.csv [-r resource] [-plot out.png] [flags]\n"+
			"       rmmgo-replay -generate N -f events.csv [flags]\n\n"+
			"Replays an RMM memory-event log against a resource and reports time per op,\n"+
			"peak reserved against peak live bytes, failures and leaks. The backend is the\n"+
			"GPU, or the simulated device with %s=simulated.\n\nFlags:\n", cudart.EnvBackend)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	o.resource.InitialPool, o.resource.MaximumPool = initial.v, maximum.v
	o.resource.ArenaSize, o.resource.BlockSize = arena.v, block.v
	o.gen.PeakLive = uint64(live.v)
	if o.file == "" {
		return nil, errors.New("no event log: give one with -f")
	}
	known := false
	for _, n := range resourceNames {
		known = known || n == o.resource.Name
	}
	if !known {
		return nil, fmt.Errorf("-r %q: want one of %s", o.resource.Name, strings.Join(resourceNames, ", "))
	}
	if o.plot != "" {
		if err := checkPlotPath(o.plot); err != nil {
			return nil, err
		}
	}
	if o.resource.Blocks < 1 {
		return nil, errors.New("-blocks must be at least 1")
	}
	if o.gen.Events < 0 || o.gen.Threads < 1 {
		return nil, errors.New("-generate needs a positive event count and -threads at least 1")
	}
	if o.gen.Events > 0 && o.gen.PeakLive < 1<<20 {
		return nil, errors.New("-live must be at least 1MiB")
	}
	return o, nil
}

// run is the command; it returns the exit status: 0 when the replay ran
// (whatever it found), 1 when it could not run, 2 for bad usage.
func run(args []string, stdout, stderr io.Writer) int {
	o, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "rmmgo-replay: %v\n", err)
		return 2
	}
	if err := replayMain(o, stdout); err != nil {
		fmt.Fprintf(stderr, "rmmgo-replay: %v\n", err)
		return 1
	}
	return 0
}

func replayMain(o *options, out io.Writer) error {
	// The resources belong to the device current on this thread: keep it.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()

	if o.gen.Events > 0 {
		if err := writeLog(o.file, generate(o.gen)); err != nil {
			return err
		}
		fmt.Fprintf(out, "generated: %s (%d events, %d threads, live bytes peak near %s, seed %d)\n",
			o.file, o.gen.Events, o.gen.Threads, formatBytes(o.gen.PeakLive), o.gen.Seed)
	}
	events, err := readLog(o.file)
	if err != nil {
		return err
	}

	rt, err := cudart.Default()
	if err != nil {
		return err
	}
	backend, err := describeBackend(rt)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "backend:  %s\n", backend)

	rr, err := buildResource(rt, o.resource)
	if err != nil {
		return fmt.Errorf("making the %s resource: %w", o.resource.Name, err)
	}
	var logging *core.Logging
	if o.logOut != "" {
		if logging, err = core.NewLogging(rr.top, core.LoggingOptions{FileName: o.logOut}); err != nil {
			return errors.Join(err, rr.close())
		}
		rr.top = logging
		rr.description += ", logged to " + o.logOut
	}
	fmt.Fprintf(out, "resource: %s\n", rr.description)

	res, err := replay(rt, rr, events)
	if logging != nil {
		err = errors.Join(err, logging.Close())
	}
	err = errors.Join(err, rr.close())
	if err != nil {
		return err
	}
	report(out, o, res)
	if o.plot != "" {
		title := fmt.Sprintf("%s: %s on the %s backend", filepath.Base(o.file), o.resource.Name, rt.Backend())
		if err := drawPlot(o.plot, title, res); err != nil {
			return err
		}
		fmt.Fprintf(out, "plot:     %s\n", o.plot)
	}
	return nil
}

func writeLog(path string, events []eventlog.Event) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := eventlog.Write(f, events); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return f.Close()
}

func readLog(path string) ([]eventlog.Event, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	events, err := eventlog.Read(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return events, nil
}

// describeBackend says which backend runs, and on what.
func describeBackend(rt cudart.Runtime) (string, error) {
	n, err := rt.GetDeviceCount()
	if err != nil {
		return "", fmt.Errorf("counting devices: %w", err)
	}
	dev, err := rt.GetDevice()
	if err != nil {
		return "", fmt.Errorf("reading the current device: %w", err)
	}
	free, total, err := rt.MemGetInfo()
	if err != nil {
		return "", fmt.Errorf("reading device memory: %w", err)
	}
	env := os.Getenv(cudart.EnvBackend)
	if env == "" {
		env = "unset"
	}
	s := fmt.Sprintf("%s (%s=%s), %d device(s); device %d: %s total, %s free",
		rt.Backend(), cudart.EnvBackend, env, n, dev, formatBytes(total), formatBytes(free))
	if rv, err := rt.RuntimeVersion(); err == nil && rt.Backend() == cudart.BackendCUDA {
		s += fmt.Sprintf(", CUDA runtime %d", rv)
	}
	return s, nil
}

func report(out io.Writer, o *options, res *result) {
	fmt.Fprintf(out, "log:      %s: %d events from %d threads on %d non-default streams\n",
		o.file, res.Events, res.Threads, res.Streams)
	fmt.Fprintf(out, "replayed: %d allocations, %d frees in %v", res.Allocs, res.Frees, res.Wall.Round(time.Millisecond))
	if res.ZeroByte > 0 {
		fmt.Fprintf(out, " (%d zero-byte events skipped)", res.ZeroByte)
	}
	fmt.Fprintln(out)

	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "time per op\tcount\tmean\tp50\tp99\tmax\ttotal\t")
	for _, r := range []struct {
		name string
		t    opTimes
	}{{"allocate", res.AllocTimes}, {"free", res.FreeTimes}} {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t\n", r.name, r.t.N, dur(r.t.Mean), dur(r.t.P50), dur(r.t.P99), dur(r.t.Max), dur(r.t.Total))
	}
	tw.Flush()

	ratio := ""
	if res.PeakLive > 0 {
		ratio = fmt.Sprintf(" (%.2fx peak live)", float64(res.PeakReserved)/float64(res.PeakLive))
	}
	fmt.Fprintf(out, "memory:   peak live %s, peak reserved %s%s, reserved at the end %s\n",
		formatBytes(res.PeakLive), formatBytes(res.PeakReserved), ratio, formatBytes(res.FinalReserved))
	if !res.HasLargestFree && o.plot != "" {
		fmt.Fprintf(out, "note:     the %s resource cannot tell its largest free block; the plot leaves it out\n", o.resource.Name)
	}

	fmt.Fprintf(out, "failures: %d allocations failed in the replay", len(res.Failures))
	if res.LoggedFailures > 0 {
		fmt.Fprintf(out, "; %d had failed in the log", res.LoggedFailures)
	}
	fmt.Fprintln(out)
	show := len(res.Failures)
	if !o.verbose {
		show = min(show, 5)
	}
	for _, f := range res.Failures[:show] {
		fmt.Fprintf(out, "          event %d: %s: %v\n", f.Index, formatBytes(uint64(f.Size)), f.Err)
	}
	if show < len(res.Failures) {
		fmt.Fprintf(out, "          ... and %d more (-v lists them)\n", len(res.Failures)-show)
	}
	for _, f := range res.FreeErrors {
		fmt.Fprintf(out, "error:    freeing %s at event %d: %v\n", formatBytes(uint64(f.Size)), f.Index, f.Err)
	}
	if res.UnmatchedFrees+res.SizeMismatches+res.DoubleAllocs > 0 {
		fmt.Fprintf(out, "log:      %d frees of unknown pointers, %d frees with another size than allocated, %d pointers allocated twice\n",
			res.UnmatchedFrees, res.SizeMismatches, res.DoubleAllocs)
	}
	fmt.Fprintf(out, "leaks:    %d allocations (%s) never freed in the log (freed after the replay)\n",
		res.Leaks, formatBytes(res.LeakedBytes))
}

func dur(d time.Duration) string {
	switch {
	case d == 0:
		return "-"
	case d < time.Microsecond:
		return fmt.Sprintf("%dns", d.Nanoseconds())
	case d < time.Millisecond:
		return fmt.Sprintf("%.1fµs", float64(d)/float64(time.Microsecond))
	case d < time.Second:
		return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond))
	}
	return fmt.Sprintf("%.2fs", d.Seconds())
}

// formatBytes writes n with a binary unit.
func formatBytes(n uint64) string {
	const units = "KMGTPE"
	if n < 1024 {
		return fmt.Sprintf("%d B", n)
	}
	v, u := float64(n)/1024, 0
	for v >= 1024 && u < len(units)-1 {
		v /= 1024
		u++
	}
	return fmt.Sprintf("%.1f %ciB", v, units[u])
}
