package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Finding 6 of issue 10: usage errors exit 2 and never crash (a --ways beyond what can be split
// among them, issue 21); an input that is wrong exits 1 without the usage hint.
func TestSplitExitCodes(t *testing.T) {
	f := fixture(t, "sstable-to-arrow/md/datasets.iris/md-1-big")
	data := f.Prefix + "-Data.db"
	for _, args := range [][]string{
		{"--ways", "-3"},
		{"--ways", "0"},
		{"--ways", "99999999999999999999"},
		{"--ways", "9223372036854775807"}, // issue 21: more than can be split is a usage error
		{"--ways", "4000000000"},
		{"--ways", "151"},                      // the parent holds 150 partitions
		{"--ranges", "(0,100],(50,200]"},       // overlapping
		{"--ranges", "(0,100]", "--ways", "2"}, // both
		{"--ways", "2", "--mode", "sideways"},
	} {
		code, _, errs := sluice(t, append([]string{"sstable", "split", data, "--out", t.TempDir()}, args...)...)
		if code != 2 || !strings.Contains(errs, "Run 'sluice --help'") {
			t.Errorf("%v: exit %d, %q; want a usage error (2)", args, code, errs)
		}
	}
	// A corrupt parent is the input's fault: exit 1, no usage hint, nothing in --out.
	dir := t.TempDir()
	for _, c := range []string{"Data.db", "Index.db", "Summary.db", "Statistics.db", "CRC.db", "TOC.txt", "Filter.db", "Digest.crc32"} {
		b, err := os.ReadFile(f.Prefix + "-" + c)
		if err != nil {
			continue
		}
		if c == "Index.db" || c == "Data.db" {
			b[len(b)/2] ^= 0x55
		}
		os.WriteFile(filepath.Join(dir, "md-1-big-"+c), b, 0o644)
	}
	for _, args := range [][]string{{"--ways", "2"}, {"--ranges", "(0,100]"}} {
		out := filepath.Join(t.TempDir(), "kids")
		code, _, errs := sluice(t, append([]string{"sstable", "split", filepath.Join(dir, "md-1-big-Data.db"), "--out", out}, args...)...)
		if code != 1 || strings.Contains(errs, "--help") {
			t.Errorf("corrupt parent %v: exit %d, %q; want 1 without the usage hint", args, code, errs)
		}
		if ents, _ := os.ReadDir(out); len(ents) != 0 {
			t.Errorf("corrupt parent %v: %d files in --out", args, len(ents))
		}
	}
}

// Finding 7 of issue 10: an explicit --mode reflink where the file system cannot clone exits
// 1 with the reason and writes nothing; auto copies and says why in "reason".
func TestSplitExplicitReflinkExitCode(t *testing.T) {
	f := fixture(t, tenK)
	out := filepath.Join(t.TempDir(), "kids")
	code, _, errs := sluice(t, "sstable", "split", f.Prefix+"-Data.db", "--out", out, "--ways", "2", "--mode", "reflink")
	if code == 0 {
		t.Skip("the temporary directory's file system clones")
	}
	if code != 1 || !strings.Contains(errs, "reflink") || strings.Contains(errs, "--help") {
		t.Fatalf("explicit reflink: exit %d, %q; want 1 with the reason", code, errs)
	}
	if ents, _ := os.ReadDir(out); len(ents) != 0 {
		t.Errorf("refused reflink left %d files", len(ents))
	}
	code, stdout, errs := sluice(t, "sstable", "split", f.Prefix+"-Data.db", "--out", out, "--ways", "2", "--json")
	var rep splitReport
	if code != 0 || json.Unmarshal([]byte(stdout), &rep) != nil {
		t.Fatalf("auto: exit %d: %s", code, errs)
	}
	if rep.Mode != "copy" || !strings.Contains(rep.Reason, "reflink unavailable") {
		t.Errorf("auto: mode %q, reason %q", rep.Mode, rep.Reason)
	}
}
