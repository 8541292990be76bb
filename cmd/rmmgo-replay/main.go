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
	files     []string // -f, comma-separated
	resources []resourceConfig
	mode      string // modeSerial or modeThreads
	repeat    int
	json      string // "": none; "-": JSON lines on stdout instead of the text; else a file
	plot      string
	logOut    string
	verbose   bool
	gen       genConfig

	backendDesc string // set by replayMain: which backend ran, on what
}

// multi reports whether the command replays more than once (several logs,
// several resources or -repeat), and so prints a table.
func (o *options) multi() bool { return len(o.files)*len(o.resources)*o.repeat > 1 }

func parseFlags(args []string, stderr io.Writer) (*options, error) {
	fs := flag.NewFlagSet("rmmgo-replay", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o := &options{}
	var base resourceConfig
	initial := sizeFlag{core.SizeDefault}
	maximum := sizeFlag{0}
	threshold := sizeFlag{core.SizeDefault}
	block := sizeFlag{1 << 20}
	limit := sizeFlag{0}
	align := sizeFlag{4096}
	live := sizeFlag{384 << 20}
	var files, resources, adaptors, arenaArg string
	fs.StringVar(&files, "f", "", "the event log(s) to replay (.csv, .csv.gz, .csv.xz), comma-separated; with -generate, the log to write")
	fs.StringVar(&resources, "r", "pool", "resource(s), comma-separated: "+strings.Join(resourceNames, ", ")+
		"; each may override flags as NAME:KEY=VALUE:... (keys initial, max, threshold, arena, block, blocks, bin-min, bin-max), e.g. pool:initial=1GiB; \"traces\": the list make bench-traces replays")
	fs.Var(&initial, "initial", "pool (and binning's pool): initial size, e.g. 1GiB; 0 grows on demand; default: half the free memory")
	fs.Var(&maximum, "max", "pool and expandable: maximum size (0: none)")
	fs.Var(&threshold, "threshold", "expandable and cuda_async: release threshold (default: none, keep everything; 0: keep nothing)")
	fs.StringVar(&arenaArg, "arena", "default", "arena: global arena size, e.g. 8GiB, or relative to the log's peak live, e.g. 1.25x (default: half the free memory)")
	fs.Var(&block, "block", "fixed_size: block size")
	fs.IntVar(&base.Blocks, "blocks", 128, "fixed_size: blocks fetched from the upstream at a time")
	fs.IntVar(&base.BinMinExp, "bin-min", 18, "binning: smallest bin is 2^bin-min bytes")
	fs.IntVar(&base.BinMaxExp, "bin-max", 22, "binning: largest bin is 2^bin-max bytes")
	fs.StringVar(&adaptors, "adaptor", "", "adaptors on top of the resource, innermost first, comma-separated: "+strings.Join(adaptorNames, ", "))
	fs.Var(&limit, "limit", "limiting adaptor: the limit (default: the device's memory)")
	fs.Var(&align, "align", "aligned adaptor: the alignment")
	fs.StringVar(&o.mode, "mode", modeSerial, "serial: every event on one OS thread with GOMAXPROCS 1, the same figures on every run; threads: one OS thread per logged thread, as RMM's replay")
	fs.IntVar(&o.repeat, "repeat", 1, "replay each log against each resource this many times and report the spread")
	fs.StringVar(&o.json, "json", "", "write one JSON line per replay to this file; - for stdout instead of the report")
	fs.StringVar(&o.plot, "plot", "", "draw memory over time into this file (.png, .svg or .pdf)")
	fs.StringVar(&o.logOut, "log", "", "write the replay's own event log to this file")
	fs.BoolVar(&o.verbose, "v", false, "list every failed allocation")
	fs.IntVar(&o.gen.Events, "generate", 0, "write a synthetic log of this many events to -f, then replay it")
	fs.IntVar(&o.gen.Threads, "threads", 4, "-generate: number of threads")
	fs.Uint64Var(&o.gen.Seed, "seed", 1, "-generate: random seed")
	fs.Var(&live, "live", "-generate: the live bytes the workload peaks at")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: rmmgo-replay -f events.csv[.gz] [-r resource[,resource...]] [-plot out.png] [flags]\n"+
			"       rmmgo-replay -generate N -f events.csv [flags]\n\n"+
			"Replays an RMM memory-event log against a resource and reports time per op,\n"+
			"peak reserved against peak live bytes, failures and leaks; several logs or\n"+
			"resources give one table. The backend is the GPU, or the simulated device\n"+
			"with %s=simulated.\n\nFlags:\n", cudart.EnvBackend)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	base.InitialPool, base.MaximumPool, base.Threshold = initial.v, maximum.v, threshold.v
	base.BlockSize, base.Limit, base.Align = block.v, limit.v, align.v
	if err := base.set("arena", arenaArg); err != nil {
		return nil, fmt.Errorf("-arena: %w", err)
	}
	o.gen.PeakLive = uint64(live.v)
	for _, f := range strings.Split(files, ",") {
		if f = strings.TrimSpace(f); f != "" {
			o.files = append(o.files, f)
		}
	}
	if len(o.files) == 0 {
		return nil, errNoLog
	}
	for _, a := range strings.Split(adaptors, ",") {
		if a = strings.TrimSpace(a); a != "" {
			if !isOneOf(a, adaptorNames) {
				return nil, fmt.Errorf("-adaptor %q: want one of %s", a, strings.Join(adaptorNames, ", "))
			}
			base.Adaptors = append(base.Adaptors, a)
		}
	}
	var err error
	if o.resources, err = parseResourceList(resources, base); err != nil {
		return nil, err
	}
	if o.mode != modeSerial && o.mode != modeThreads {
		return nil, fmt.Errorf("-mode %q: want %s or %s", o.mode, modeSerial, modeThreads)
	}
	if o.repeat < 1 {
		return nil, errors.New("-repeat must be at least 1")
	}
	if o.multi() && (o.plot != "" || o.logOut != "") {
		return nil, errors.New("-plot and -log take one log, one resource and no -repeat")
	}
	if o.gen.Events > 0 && len(o.files) != 1 {
		return nil, errors.New("-generate writes one log: give one file with -f")
	}
	if o.plot != "" {
		if err := checkPlotPath(o.plot); err != nil {
			return nil, err
		}
	}
	if base.Blocks < 1 {
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

	text := out // the human-readable report
	var jsonOut io.Writer
	switch o.json {
	case "":
	case "-":
		jsonOut, text = out, io.Discard
	default:
		f, err := os.Create(o.json)
		if err != nil {
			return err
		}
		defer f.Close()
		jsonOut = f
	}

	if o.gen.Events > 0 {
		if err := writeLog(o.files[0], generate(o.gen)); err != nil {
			return err
		}
		fmt.Fprintf(text, "generated: %s (%d events, %d threads, live bytes peak near %s, seed %d)\n",
			o.files[0], o.gen.Events, o.gen.Threads, formatBytes(o.gen.PeakLive), o.gen.Seed)
	}

	rt, err := cudart.Default()
	if err != nil {
		return err
	}
	backend, err := describeBackend(rt)
	if err != nil {
		return err
	}
	fmt.Fprintf(text, "backend:  %s\n", backend)
	o.backendDesc = backend

	var rows []tableRow
	for _, file := range o.files {
		events, err := readLog(file)
		if err != nil {
			return err
		}
		peakLive, largest := logPeakLive(events), largestRequest(events)
		for _, cfg := range o.resources {
			row := tableRow{Trace: file, Config: cfg}
			if cfg.Name == "fixed_size" && o.multi() && largest > max(cfg.BlockSize, 1<<20) {
				// Its blocks cannot hold the log's large requests: a row of
				// failures says nothing about the resource.
				row.Skip = fmt.Sprintf("the log's largest request (%s) exceeds the block (%s)", formatBytes(uint64(largest)), formatBytes(uint64(max(cfg.BlockSize, 1<<20))))
				rows = append(rows, row)
				continue
			}
			for rep := 0; rep < o.repeat; rep++ {
				res, desc, err := replayOnce(rt, o, cfg, events, peakLive)
				if err != nil {
					if !o.multi() {
						return err
					}
					row.Err = err
					break
				}
				res.LogPeakLive = peakLive
				row.Desc, row.Runs = desc, append(row.Runs, res)
				if jsonOut != nil {
					if err := writeJSON(jsonOut, rt, o, file, cfg, desc, rep, res); err != nil {
						return err
					}
				}
				if !o.multi() {
					fmt.Fprintf(text, "resource: %s\n", desc)
					report(text, o, file, cfg, res)
					if o.plot != "" {
						title := fmt.Sprintf("%s: %s on the %s backend", filepath.Base(file), cfg.label(), rt.Backend())
						if err := drawPlot(o.plot, title, res); err != nil {
							return err
						}
						fmt.Fprintf(text, "plot:     %s\n", o.plot)
					}
				}
			}
			rows = append(rows, row)
		}
	}
	if o.multi() {
		printTable(text, o, rows)
	}
	return nil
}

// replayOnce builds the resource cfg describes, replays events against it
// and closes it.
func replayOnce(rt cudart.Runtime, o *options, cfg resourceConfig, events []eventlog.Event, peakLive uint64) (*result, string, error) {
	rr, err := buildResource(rt, cfg, peakLive)
	if err != nil {
		return nil, "", fmt.Errorf("making the %s resource: %w", cfg.label(), err)
	}
	var logging *core.Logging
	if o.logOut != "" {
		if logging, err = core.NewLogging(rr.top, core.LoggingOptions{FileName: o.logOut}); err != nil {
			return nil, "", errors.Join(err, rr.close())
		}
		rr.top = logging
		rr.description += ", logged to " + o.logOut
	}
	res, err := replay(rt, rr, events, o.mode)
	if logging != nil {
		err = errors.Join(err, logging.Close())
	}
	err = errors.Join(err, rr.close())
	if err != nil {
		return nil, "", err
	}
	return res, rr.description, nil
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

func report(out io.Writer, o *options, file string, cfg resourceConfig, res *result) {
	fmt.Fprintf(out, "log:      %s: %d events from %d threads on %d non-default streams\n",
		file, res.Events, res.Threads, res.Streams)
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
	if res.LogPeakLive > res.PeakLive {
		fmt.Fprintf(out, "          the log's own peak live was %s (peak reserved %.2fx that): allocations failed here\n",
			formatBytes(res.LogPeakLive), res.ratio())
	}
	if !res.HasLargestFree && o.plot != "" {
		fmt.Fprintf(out, "note:     the %s resource cannot tell its largest free block; the plot leaves it out\n", cfg.Name)
	}

	if res.StatsPeak > 0 {
		fmt.Fprintf(out, "statistics: peak %s allocated through the statistics adaptor\n", formatBytes(res.StatsPeak))
	}
	fmt.Fprintf(out, "failures: %d allocations failed in the replay", len(res.Failures))
	if res.FailuresWithRoom > 0 {
		fmt.Fprintf(out, " (%d while the resource held the request in free bytes)", res.FailuresWithRoom)
	}
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
