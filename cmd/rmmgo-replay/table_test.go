package main

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmmgo/rmmgo/core/eventlog"
)

// genLog writes a small synthetic log, plain and gzip-compressed (and
// xz-compressed when the xz command is there), and returns their paths.
func genLog(t *testing.T) (plain, gz, xz string) {
	t.Helper()
	dir := t.TempDir()
	plain = filepath.Join(dir, "gen.csv")
	events := generate(genConfig{Events: 3000, Threads: 3, Seed: 5, PeakLive: 96 << 20})
	require.NoError(t, writeLog(plain, events))
	gz = plain + ".gz"
	f, err := os.Create(gz)
	require.NoError(t, err)
	zw := gzip.NewWriter(f)
	require.NoError(t, eventlog.Write(zw, events))
	require.NoError(t, zw.Close())
	require.NoError(t, f.Close())
	if _, err := exec.LookPath("xz"); err == nil {
		xz = plain + ".xz"
		require.NoError(t, exec.Command("sh", "-c", "xz -kc "+plain+" > "+xz).Run())
	}
	return plain, gz, xz
}

func TestCompressedLogs(t *testing.T) {
	plain, gz, xz := genLog(t)
	want, err := readLog(plain)
	require.NoError(t, err)
	got, err := readLog(gz)
	require.NoError(t, err)
	assert.Equal(t, want, got, ".gz reads as the plain log")
	if xz == "" {
		t.Log("no xz command: .xz not tested")
		return
	}
	got, err = readLog(xz)
	require.NoError(t, err)
	assert.Equal(t, want, got, ".xz reads as the plain log")
}

func readJSONLines(t *testing.T, s string) []jsonRecord {
	t.Helper()
	var recs []jsonRecord
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		var r jsonRecord
		require.NoError(t, json.Unmarshal(sc.Bytes(), &r), "line %q", sc.Text())
		recs = append(recs, r)
	}
	return recs
}

// TestTableAndJSON replays two logs against several resources (one with
// adaptors on top) and checks the table, the JSON lines, and that serial
// replays give the same memory figures every time. Kept small: the race
// detector runs it too.
func TestTableAndJSON(t *testing.T) {
	plain, gz, _ := genLog(t)
	jsonPath := filepath.Join(t.TempDir(), "out.jsonl")
	args := []string{"-f", plain + "," + gz, "-r", "pool:initial=0,binning:initial=0:bin-max=20,arena:arena=3x,expandable:threshold=0,cuda_async,fixed_size",
		"-adaptor", "statistics,limiting"}
	out, errOut, code := runCmd(t, append(args, "-json", jsonPath)...)
	require.Equal(t, 0, code, "stderr: %s", errOut)
	assert.Contains(t, out, "| trace | resource | peak live |")
	assert.Contains(t, out, "| gen | expandable:threshold=0+statistics+limiting |")
	assert.Contains(t, out, "not replayed (note 1)", "fixed_size cannot hold the log's large requests")
	assert.Equal(t, 12, strings.Count(out, "| gen |"), "two logs, six resources")
	b, err := os.ReadFile(jsonPath)
	require.NoError(t, err)
	first := readJSONLines(t, string(b))
	require.Len(t, first, 10, "a line per replay")
	for _, r := range first {
		assert.Equal(t, "gen", r.Trace)
		assert.Equal(t, modeSerial, r.Mode)
		assert.Equal(t, []string{"statistics", "limiting"}, r.Adaptors)
		assert.Positive(t, r.PeakLive)
		assert.GreaterOrEqual(t, r.PeakReserved, r.PeakLive, r.Resource)
		assert.Equal(t, r.PeakLive, r.StatsPeak, "the statistics adaptor saw the live bytes: %s", r.Resource)
		assert.Zero(t, r.Failures, r.Resource)
	}

	// -json - writes only JSON lines to stdout; serial figures repeat.
	out, errOut, code = runCmd(t, "-f", gz, "-r", "pool:initial=0,binning:initial=0:bin-max=20", "-json", "-")
	require.Equal(t, 0, code, "stderr: %s", errOut)
	again := readJSONLines(t, out)
	require.Len(t, again, 2)
	for i := range again {
		assert.Equal(t, first[5+i].PeakReserved, again[i].PeakReserved, "serial replays repeat: %s", again[i].Resource)
	}
}

func TestRepeatSpread(t *testing.T) {
	plain, _, _ := genLog(t)
	out, errOut, code := runCmd(t, "-f", plain, "-r", "pool", "-initial", "0", "-mode", "threads", "-repeat", "3")
	require.Equal(t, 0, code, "stderr: %s", errOut)
	assert.Contains(t, out, "mode:     threads; 3 runs each: median (min-max)")
	assert.Contains(t, out, "| gen | pool |")
}

func TestTableUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-f", "a.csv", "-r", "pool:bogus=1"}, `unknown key "bogus"`},
		{[]string{"-f", "a.csv", "-r", "pool:initial"}, "is not KEY=VALUE"},
		{[]string{"-f", "a.csv", "-adaptor", "nope"}, `-adaptor "nope"`},
		{[]string{"-f", "a.csv", "-mode", "fast"}, `-mode "fast"`},
		{[]string{"-f", "a.csv,b.csv", "-plot", "x.png"}, "-plot and -log take one log"},
		{[]string{"-f", "a.csv", "-repeat", "0"}, "-repeat must be at least 1"},
	} {
		_, errOut, code := runCmd(t, tc.args...)
		assert.Equal(t, 2, code, "%v", tc.args)
		assert.Contains(t, errOut, tc.want, "%v", tc.args)
	}
	cfgs, err := parseResourceList("traces", resourceConfig{})
	require.NoError(t, err)
	assert.Len(t, cfgs, strings.Count(benchTraces, ",")+1)
}
