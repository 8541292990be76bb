package main

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/rmmgo/rmmgo/cudart"
)

// tableRow is one log replayed against one resource, -repeat times.
type tableRow struct {
	Trace  string
	Config resourceConfig
	Desc   string
	Runs   []*result
	Err    error  // the resource could not be made or the replay could not run
	Skip   string // why the resource was not replayed on this log
}

// ratio is peak reserved over the log's peak live: the memory the resource
// held for the memory the work needed (allocations that failed here
// included, so that a bounded resource is not flattered by its failures).
func (r *result) ratio() float64 {
	live := max(r.LogPeakLive, r.PeakLive)
	if live == 0 {
		return 0
	}
	return float64(r.PeakReserved) / float64(live)
}

// nsPerOp is the mean time of an allocation or a free.
func (r *result) nsPerOp() float64 {
	n := r.AllocTimes.N + r.FreeTimes.N
	if n == 0 {
		return 0
	}
	return float64(r.AllocTimes.Total+r.FreeTimes.Total) / float64(n)
}

// traceName is a log's file name without its directory and extensions.
func traceName(path string) string {
	b := filepath.Base(path)
	for _, ext := range []string{".gz", ".xz", ".csv"} {
		b = strings.TrimSuffix(b, ext)
	}
	return b
}

// spread writes the median of vs, and the range when the runs differ.
func spread(vs []float64, format string) string {
	s := slices.Clone(vs)
	slices.Sort(s)
	out := median(vs, format)
	if lo, hi := fmt.Sprintf(format, s[0]), fmt.Sprintf(format, s[len(s)-1]); lo != hi {
		out += " (" + lo + "-" + hi + ")"
	}
	return out
}

// median writes the median of vs.
func median(vs []float64, format string) string {
	s := slices.Clone(vs)
	slices.Sort(s)
	m := s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return fmt.Sprintf(format, m)
}

// printTable writes one markdown table: a row per log and resource.
func printTable(out io.Writer, o *options, rows []tableRow) {
	rep := ""
	if o.repeat > 1 {
		rep = fmt.Sprintf("; %d runs each: median (min-max)", o.repeat)
	}
	fmt.Fprintf(out, "mode:     %s%s\n\n", o.mode, rep)
	fmt.Fprintln(out, "| trace | resource | peak live | peak reserved | reserved / live | failures (with room) | ns per op (alloc / free) | replay |")
	fmt.Fprintln(out, "| --- | --- | --- | --- | --- | --- | --- | --- |")
	var notes []string
	for _, r := range rows {
		name := traceName(r.Trace)
		if r.Skip != "" {
			fmt.Fprintf(out, "| %s | %s | - | - | - | not replayed (note %d) | - | - |\n", name, r.Config.label(), len(notes)+1)
			notes = append(notes, fmt.Sprintf("%d. %s on %s: %s", len(notes)+1, r.Config.label(), name, r.Skip))
			continue
		}
		if r.Err != nil {
			fmt.Fprintf(out, "| %s | %s | - | - | - | could not run (note %d) | - | - |\n", name, r.Config.label(), len(notes)+1)
			notes = append(notes, fmt.Sprintf("%d. %s on %s: %v", len(notes)+1, r.Config.label(), name, r.Err))
			continue
		}
		var reserved, ratio, ns []float64
		var fails, room []int
		var aNs, fNs, wall []float64
		for _, res := range r.Runs {
			reserved = append(reserved, float64(res.PeakReserved)/(1<<30))
			ratio = append(ratio, res.ratio())
			ns = append(ns, res.nsPerOp())
			fails = append(fails, len(res.Failures))
			room = append(room, res.FailuresWithRoom)
			aNs = append(aNs, float64(res.AllocTimes.Mean))
			fNs = append(fNs, float64(res.FreeTimes.Mean))
			wall = append(wall, res.Wall.Seconds())
		}
		res := r.Runs[0]
		failCol := fmt.Sprint(fails[0])
		if o.repeat > 1 && slices.Min(fails) != slices.Max(fails) {
			failCol = fmt.Sprintf("%d-%d", slices.Min(fails), slices.Max(fails))
		}
		if slices.Max(room) > 0 {
			if slices.Min(room) != slices.Max(room) {
				failCol += fmt.Sprintf(" (%d-%d)", slices.Min(room), slices.Max(room))
			} else {
				failCol += fmt.Sprintf(" (%d)", room[0])
			}
		}
		fmt.Fprintf(out, "| %s | %s | %s | %s GiB | %s | %s | %s (%s / %s) | %s s |\n",
			name, r.Config.label(), formatBytes(max(res.LogPeakLive, res.PeakLive)), spread(reserved, "%.2f"), spread(ratio, "%.2fx"),
			failCol, median(ns, "%.0f"), median(aNs, "%.0f"), median(fNs, "%.0f"), median(wall, "%.2f"))
	}
	fmt.Fprintln(out)
	fmt.Fprintln(out, "peak live: the most bytes the log held at once (requested sizes); peak reserved: the most the")
	fmt.Fprintln(out, "resource held from the device; reserved / live: the two over each other; failures: allocations")
	fmt.Fprintln(out, "that succeeded in the log and failed here, in brackets those that failed while the resource held")
	fmt.Fprintln(out, "the request in free bytes (reserved minus live); ns per op: mean time of an allocation or a free")
	fmt.Fprintln(out, "as the replaying thread saw it; replay: the replay's wall time.")
	for _, n := range notes {
		fmt.Fprintln(out, n)
	}
}

// jsonRecord is one replay as -json writes it: one line per replay.
type jsonRecord struct {
	Trace            string   `json:"trace"`
	File             string   `json:"file"`
	Resource         string   `json:"resource"`
	Description      string   `json:"description"`
	Adaptors         []string `json:"adaptors,omitempty"`
	Mode             string   `json:"mode"`
	Run              int      `json:"run"`
	Backend          string   `json:"backend"`
	Device           string   `json:"device,omitempty"`
	Events           int      `json:"events"`
	Threads          int      `json:"threads"`
	Allocs           int      `json:"allocations"`
	Frees            int      `json:"frees"`
	PeakLive         uint64   `json:"peak_live_bytes"`
	LogPeakLive      uint64   `json:"log_peak_live_bytes"`
	PeakReserved     uint64   `json:"peak_reserved_bytes"`
	Ratio            float64  `json:"reserved_over_live"`
	FinalReserved    uint64   `json:"final_reserved_bytes"`
	StatsPeak        uint64   `json:"statistics_peak_bytes,omitempty"`
	Failures         int      `json:"failures"`
	FailuresWithRoom int      `json:"failures_with_room"`
	LoggedFailures   int      `json:"logged_failures"`
	Leaks            int      `json:"leaks"`
	AllocNs          float64  `json:"alloc_ns_mean"`
	AllocP50Ns       float64  `json:"alloc_ns_p50"`
	AllocP99Ns       float64  `json:"alloc_ns_p99"`
	FreeNs           float64  `json:"free_ns_mean"`
	FreeP50Ns        float64  `json:"free_ns_p50"`
	FreeP99Ns        float64  `json:"free_ns_p99"`
	NsPerOp          float64  `json:"ns_per_op"`
	WallSeconds      float64  `json:"wall_s"`
	Time             string   `json:"time"`
}

func writeJSON(w io.Writer, rt cudart.Runtime, o *options, file string, cfg resourceConfig, desc string, run int, res *result) error {
	rec := jsonRecord{
		Trace: traceName(file), File: file, Resource: cfg.label(), Description: desc, Adaptors: cfg.Adaptors,
		Mode: o.mode, Run: run, Backend: string(rt.Backend()), Device: o.backendDesc,
		Events: res.Events, Threads: res.Threads, Allocs: res.Allocs, Frees: res.Frees,
		PeakLive: res.PeakLive, LogPeakLive: res.LogPeakLive, PeakReserved: res.PeakReserved, Ratio: res.ratio(), FinalReserved: res.FinalReserved,
		StatsPeak: res.StatsPeak, Failures: len(res.Failures), FailuresWithRoom: res.FailuresWithRoom,
		LoggedFailures: res.LoggedFailures, Leaks: res.Leaks,
		AllocNs: float64(res.AllocTimes.Mean), AllocP50Ns: float64(res.AllocTimes.P50), AllocP99Ns: float64(res.AllocTimes.P99),
		FreeNs: float64(res.FreeTimes.Mean), FreeP50Ns: float64(res.FreeTimes.P50), FreeP99Ns: float64(res.FreeTimes.P99),
		NsPerOp: res.nsPerOp(), WallSeconds: res.Wall.Seconds(), Time: time.Now().UTC().Format(time.RFC3339),
	}
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}
