package main

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"

	"github.com/rmmgo/rmmgo/core/eventlog"
)

// readLog reads an event log: plain CSV, gzip-compressed (.gz, read with
// the standard library) or xz-compressed (.xz, read through the xz command,
// which Debian installs by default: xz-utils).
func readLog(path string) ([]eventlog.Event, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var r io.Reader = f
	switch {
	case strings.HasSuffix(path, ".gz"):
		zr, err := gzip.NewReader(f)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		defer zr.Close()
		r = zr
	case strings.HasSuffix(path, ".xz"):
		xz, err := exec.LookPath("xz")
		if err != nil {
			return nil, fmt.Errorf("%s: reading an .xz log needs the xz command (Debian: apt-get install xz-utils), or decompress it first: %w", path, err)
		}
		var out, stderr bytes.Buffer
		cmd := exec.Command(xz, "-dc")
		cmd.Stdin, cmd.Stdout, cmd.Stderr = f, &out, &stderr
		if err := cmd.Run(); err != nil {
			return nil, fmt.Errorf("%s: xz -dc: %w: %s", path, err, strings.TrimSpace(stderr.String()))
		}
		r = &out
	}
	events, err := eventlog.Read(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return events, nil
}

// logPeakLive is the most bytes the log itself held at once (requested
// sizes): what the replay's peak live will be when every allocation
// succeeds. Relative sizes (-arena 1.25x) are taken of it.
func logPeakLive(events []eventlog.Event) uint64 {
	live := map[uintptr]uintptr{}
	var sum, peak uint64
	for _, e := range events {
		switch e.Action {
		case eventlog.ActionAllocate:
			if e.Size == 0 {
				continue
			}
			// A pointer allocated twice without a free: the replay keeps the
			// first allocation as a leak, so its bytes stay in the sum.
			live[e.Pointer] = e.Size
			sum += uint64(e.Size)
			peak = max(peak, sum)
		case eventlog.ActionFree:
			if n, ok := live[e.Pointer]; ok {
				sum -= uint64(n)
				delete(live, e.Pointer)
			}
		}
	}
	return peak
}

// largestRequest is the log's largest allocation.
func largestRequest(events []eventlog.Event) uintptr {
	var m uintptr
	for _, e := range events {
		if e.Action == eventlog.ActionAllocate {
			m = max(m, e.Size)
		}
	}
	return m
}

var errNoLog = errors.New("no event log: give one with -f")
