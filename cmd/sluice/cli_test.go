package main

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicedb/sluice/internal/testkit/fixtures"
)

// sluice runs one command line and returns its exit code, stdout and stderr.
func sluice(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(append([]string{"--log-format", "json"}, args...), &out, &errb)
	return code, out.String(), errb.String()
}

func fixture(t *testing.T, name string) fixtures.SSTable {
	for _, f := range fixtures.All(t) {
		if f.Name == name {
			return f
		}
	}
	t.Fatalf("no fixture %s", name)
	return fixtures.SSTable{}
}

const tenK = "sstable-transformer/oa/spark_test.testtable_10k/oa-13-big"

// The JSON interfaces scripts depend on: describe's fields, and keys equal to the listing.
func TestDescribeAndKeysJSON(t *testing.T) {
	f := fixture(t, tenK)
	code, out, errs := sluice(t, "sstable", "describe", "--json", f.Path("Data.db"))
	if code != 0 {
		t.Fatalf("describe: exit %d: %s", code, errs)
	}
	var d map[string]any
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]any{"version": "oa", "format": "big", "partitioner": "org.apache.cassandra.dht.Murmur3Partitioner",
		"partitions": 10000.0, "first_token": "-9223297786983086897", "first_key": "000010dd", "data_length": 146190.0,
		"data_file_length": 97642.0, "compressor": "LZ4Compressor", "chunk_length": 16384.0, "chunk_count": 10.0} {
		if d[k] != want {
			t.Errorf("describe %s = %v, want %v", k, d[k], want)
		}
	}
	if comps, _ := d["components"].([]any); len(comps) != 8 {
		t.Errorf("components = %v", d["components"])
	}

	code, out, _ = sluice(t, "sstable", "keys", "--json", f.Prefix)
	if code != 0 {
		t.Fatalf("keys: exit %d", code)
	}
	want := f.Keys(t)
	sc := bufio.NewScanner(strings.NewReader(out))
	i := 0
	for sc.Scan() {
		var k struct {
			Ordinal  int64  `json:"ordinal"`
			Key      string `json:"key"`
			Token    string `json:"token"`
			Position int64  `json:"position"`
		}
		if err := json.Unmarshal(sc.Bytes(), &k); err != nil {
			t.Fatal(err)
		}
		w := want[i]
		if k.Ordinal != int64(w.Ordinal) || k.Key != hex.EncodeToString(w.Key) || k.Token != w.Token || k.Position != w.DataPos {
			t.Fatalf("line %d: %+v, want %+v", i, k, w)
		}
		i++
	}
	if i != len(want) {
		t.Fatalf("%d lines, want %d", i, len(want))
	}
}

// verify: exit 0 when everything holds, 1 with one line per problem naming the file and offset,
// 2 for usage errors.
func TestVerifyExitCodes(t *testing.T) {
	f := fixture(t, tenK)
	if code, out, _ := sluice(t, "sstable", "verify", "--extended", f.Prefix); code != 0 || !strings.Contains(out, "OK") {
		t.Fatalf("verify of a good sstable: exit %d: %s", code, out)
	}
	dir := t.TempDir()
	matches, _ := filepath.Glob(f.Prefix + "-*")
	for _, m := range matches {
		b, _ := os.ReadFile(m)
		if strings.HasSuffix(m, "-Data.db") {
			b[100] ^= 0xff
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(m)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	code, out, _ := sluice(t, "sstable", "verify", filepath.Join(dir, "oa-13-big-Data.db"))
	if code != 1 || !strings.Contains(out, "oa-13-big-Data.db: offset") {
		t.Fatalf("verify of a damaged sstable: exit %d: %s", code, out)
	}
	var rep struct {
		OK       bool `json:"ok"`
		Problems []struct {
			File   string `json:"file"`
			Offset int64  `json:"offset"`
		} `json:"problems"`
	}
	code, out, _ = sluice(t, "sstable", "verify", "--json", filepath.Join(dir, "oa-13-big-Data.db"))
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 1 || rep.OK || len(rep.Problems) == 0 {
		t.Fatalf("verify --json: exit %d, %v, %s", code, err, out)
	}
	for _, args := range [][]string{{"sstable", "verify"}, {"sstable", "verify", "--bogus", "x"}, {"sstable", "gen", "--version", "zz", "--out", dir, "--partitions", "1"}} {
		if code, _, _ := sluice(t, args...); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
	if code, _, errs := sluice(t, "sstable", "describe", filepath.Join(dir, "nope-1-big-Data.db")); code != 1 || errs == "" {
		t.Errorf("describe of a missing file: exit %d %q", code, errs)
	}
}

// gen, then split --json with the documented fields; the children verify.
func TestGenAndSplitJSON(t *testing.T) {
	dir := t.TempDir()
	data := []string{genSmall(t, dir, "da", 64)}
	code, out, errs := sluice(t, "sstable", "split", data[0], "--out", filepath.Join(dir, "kids"), "--ways", "3", "--json")
	if code != 0 {
		t.Fatalf("split: %s", errs)
	}
	var rep struct {
		Children []struct {
			Path             string `json:"path"`
			Range            string `json:"range"`
			Partitions       int64  `json:"partitions"`
			FirstToken       string `json:"first_token"`
			LastToken        string `json:"last_token"`
			DataFileLength   int64  `json:"data_file_length"`
			FillerPartitions *int64 `json:"filler_partitions"`
		} `json:"children"`
		Mode         string   `json:"mode"`
		BytesRead    *int64   `json:"bytes_read"`
		BytesWritten *int64   `json:"bytes_written"`
		Wall         *float64 `json:"wall_seconds"`
		CPU          *float64 `json:"cpu_seconds"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Children) != 3 || rep.Mode == "" || rep.BytesRead == nil || rep.BytesWritten == nil || rep.Wall == nil || rep.CPU == nil {
		t.Fatalf("split --json: %s", out)
	}
	var total int64
	for _, c := range rep.Children {
		total += c.Partitions
		if c.FillerPartitions == nil || c.FirstToken == "" || c.Range == "" || c.DataFileLength == 0 {
			t.Errorf("child %+v lacks fields", c)
		}
		if code, out, _ := sluice(t, "sstable", "verify", "--extended", c.Path); code != 0 {
			t.Errorf("child %s: %s", c.Path, out)
		}
	}
	if total != 64 {
		t.Errorf("children hold %d partitions, want 64", total)
	}
}

// slice --json prints exactly the documented fields for the one sstable it writes, which
// verifies; overlapping ranges are a usage error (exit 2) and write nothing; ranges holding
// no partition write nothing.
func TestSliceJSON(t *testing.T) {
	f := fixture(t, tenK)
	dir := t.TempDir()
	spec := "(-9000000000000000000,-8000000000000000000],(-100,5000000000000000],(7000000000000000000,-9100000000000000000]"
	code, out, errs := sluice(t, "sstable", "slice", f.Path("Data.db"), "--ranges", spec, "--out", filepath.Join(dir, "one"), "--mode", "copy", "--json")
	if code != 0 {
		t.Fatalf("slice: exit %d: %s", code, errs)
	}
	var rep map[string]any
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	want := []string{"path", "partitions", "runs", "filler_partitions", "filler_bytes", "reencoded_bytes", "data_file_length", "digest", "mode", "reason", "bytes_written", "wall_seconds"}
	if len(rep) != len(want) {
		t.Errorf("fields %v, want exactly %v", rep, want)
	}
	for _, k := range want {
		if _, ok := rep[k]; !ok {
			t.Errorf("no %q in %s", k, out)
		}
	}
	// The wrapping range is two pieces: four runs. The fixture's keys are ints, which no filler
	// fits: its runs are re-encoded, and the reason says so.
	if rep["runs"].(float64) != 4 || rep["mode"] != "copy" || rep["partitions"].(float64) == 0 || !strings.Contains(rep["reason"].(string), "re-encoded") {
		t.Errorf("slice --json: %s", out)
	}
	if code, out, _ := sluice(t, "sstable", "verify", "--extended", rep["path"].(string)); code != 0 {
		t.Errorf("the slice does not verify: %s", out)
	}
	if ds, _ := filepath.Glob(filepath.Join(dir, "one", "*-TOC.txt")); len(ds) != 1 {
		t.Errorf("wrote %v, want one sstable", ds)
	}

	over := filepath.Join(dir, "over")
	if code, _, errs := sluice(t, "sstable", "slice", f.Path("Data.db"), "--ranges", "(0,100],(50,200]", "--out", over); code != 2 {
		t.Errorf("overlapping ranges: exit %d (%s), want 2", code, errs)
	}
	if _, err := os.Stat(over); !os.IsNotExist(err) {
		t.Errorf("overlapping ranges created %s", over)
	}

	code, out, _ = sluice(t, "sstable", "slice", f.Path("Data.db"), "--ranges", "(1,2]", "--out", filepath.Join(dir, "none"), "--json")
	if code != 0 || !strings.Contains(out, `"path": ""`) {
		t.Errorf("empty range: exit %d: %s", code, out)
	}
	if ds, _ := filepath.Glob(filepath.Join(dir, "none", "*-TOC.txt")); len(ds) != 0 {
		t.Errorf("empty range wrote %v", ds)
	}
}

// Usage bounds: a --ways beyond what a split can make or a --ranges list beyond the protocol's
// bound is a usage error (exit 2) that names the bound, and nothing is written.
func TestUsageBounds(t *testing.T) {
	dir := t.TempDir()
	data := []string{genSmall(t, dir, "oa", 20)}
	many := strings.Repeat("(1,2],", maxRanges) + "(3,4]"
	for _, c := range []struct {
		args  []string
		bound string
	}{
		{[]string{"sstable", "split", data[0], "--ways", "9223372036854775807"}, "want 1 to 65536"},
		{[]string{"sstable", "split", data[0], "--ways", "4000000000"}, "want 1 to 65536"},
		{[]string{"sstable", "split", data[0], "--ways", "21"}, "holds 20 partitions, so at most 20 children"},
		{[]string{"sstable", "split", data[0], "--ranges", many}, "at most 65536"},
		{[]string{"sstable", "slice", data[0], "--ranges", many}, "at most 65536"},
	} {
		out := filepath.Join(dir, "out")
		code, _, errs := sluice(t, append(c.args, "--out", out)...)
		if code != 2 || !strings.Contains(errs, c.bound) {
			t.Errorf("%s: exit %d, %q; want exit 2 naming %q", strings.Join(c.args[:3], " "), code, errs, c.bound)
		}
		if ds, _ := filepath.Glob(filepath.Join(out, "*-Data.db")); len(ds) != 0 {
			t.Errorf("%s wrote %v", strings.Join(c.args[:3], " "), ds)
		}
	}
	if code, _, errs := sluice(t, "sstable", "split", data[0], "--ways", "20", "--out", filepath.Join(dir, "ok")); code != 0 {
		t.Errorf("--ways 20 of 20 partitions: %s", errs)
	}
}

// genSmall generates an sstable of n 8 KiB partitions of version v in dir and returns its Data.db.
func genSmall(t *testing.T, dir, v string, n int) string {
	t.Helper()
	if code, _, errs := sluice(t, "sstable", "gen", "--out", dir, "--version", v, "--partitions", fmt.Sprint(n), "--partition-size", "8KiB", "--row-size", "1KiB"); code != 0 {
		t.Fatalf("gen: %s", errs)
	}
	data, _ := filepath.Glob(filepath.Join(dir, "sluice", "stress-*", v+"-1-*-Data.db"))
	if len(data) != 1 {
		t.Fatalf("gen wrote %v", data)
	}
	return data[0]
}
