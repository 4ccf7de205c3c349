package interop

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/sluicedb/sluice/sstable/token"
)

var (
	enabled = os.Getenv("SLUICE_INTEROP") == "1"
	repo    string // the repository root
	bin     string // sluice, built once
	work    string // scratch for the whole run
)

func TestMain(m *testing.M) {
	if !enabled {
		fmt.Println("interop: skipped (set SLUICE_INTEROP=1, or run `make interop`; needs Java 17 and Maven)")
		os.Exit(m.Run())
	}
	_, file, _, _ := runtime.Caller(0)
	repo = filepath.Dir(filepath.Dir(file))
	var err error
	if work, err = os.MkdirTemp("", "sluice-interop-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = filepath.Join(work, "sluice")
	build := exec.Command("go", "build", "-o", bin, "./cmd/sluice")
	build.Dir, build.Stdout, build.Stderr = repo, os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "interop: go build:", err)
		os.Exit(1)
	}
	// Fetch Cassandra (once per machine) and compile the harness before any test times itself.
	prep := exec.Command(filepath.Join(repo, "interop", "cassandra.sh"), "build")
	prep.Stdout, prep.Stderr = os.Stderr, os.Stderr
	if err := prep.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "interop: fetching and compiling the Cassandra harness:", err)
		os.Exit(1)
	}
	code := m.Run()
	if os.Getenv("SLUICE_INTEROP_KEEP") == "" {
		os.RemoveAll(work)
	} else {
		fmt.Println("interop: kept", work)
	}
	os.Exit(code)
}

func need(t *testing.T) {
	t.Helper()
	if !enabled {
		t.Skip("SLUICE_INTEROP=1 not set")
	}
}

// run runs a command and returns its stdout; stderr goes into the error.
func run(t testing.TB, name string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(name, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if err != nil {
		return out.String(), fmt.Errorf("%s %s: %v: %s", filepath.Base(name), strings.Join(args, " "), err, tail(errb.String(), 2000))
	}
	return out.String(), nil
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

// sluice runs the sluice binary.
func sluice(t testing.TB, args ...string) (string, error) {
	t.Helper()
	return run(t, bin, args...)
}

// harness runs the Cassandra harness.
func harness(t testing.TB, args ...string) (string, error) {
	t.Helper()
	return run(t, filepath.Join(repo, "interop", "cassandra.sh"), append([]string{"run"}, args...)...)
}

// part is one partition as Cassandra's scanner saw it.
type part struct {
	Key, Token, Digest string
	Line               string // the whole P line, what the READ/SCAN/RSCAN digests are over
}

// rangeScan is Cassandra's getScanner(List.of(range)) over one range of --ranges (an RSCAN line):
// the section of Data.db partial streaming, repair validation and cleanup read.
type rangeScan struct {
	OK         bool
	Msg        string // the rest of the line after "ok " or "fail "
	Partitions int    // partitions that are not empty
	Empty      int    // empty partitions (no rows, no static row, no markers, live partition deletion)
	Digest     string // over the P lines of the partitions that are not empty, as READ's
	Keys       []string
	EmptyKeys  []string // the empty partitions of Keys
	Truncated  bool     // Keys and EmptyKeys stop short (the harness caps key lists)
}

// view is Cassandra's view of one sstable.
type view struct {
	Path     string
	Parts    []part
	Read     string // "ok partitions=N digest=D ..." or "fail ...": the index-driven read
	Scan     string // the same for the sequential read from position 0 (compaction's)
	RowIndex string // "ok ..." or "fail ...": partitions read again through their row index
	Meta     string
	Basic    string // sstableverify
	Extended string // sstableverify -e
	Scrub    string // sstablescrub's work on a copy: "ok good=N bad=N empty=N" or "fail ..."

	// Every partition key the index-driven read (READKEYS) and the sequential read (SCANKEYS)
	// returned, in order, empty partitions included; the Empty lists hold the empty ones alone.
	// Set only when the read is ok. The Truncated flags say a list stops short.
	ReadKeys, ReadEmpty []string
	ReadKeysTruncated   bool
	ScanKeys, ScanEmpty []string
	ScanKeysTruncated   bool
	RangeScans          map[string]*rangeScan // by range text as given to --ranges (token.Range.String)
}

func (v *view) readOK() bool { return strings.HasPrefix(v.Read, "ok") }
func (v *view) metaOK() bool { return strings.HasPrefix(v.Meta, "ok") }

// rowIndexOK reports a row index (promoted index, BTI Rows.db) that read differently.
func rowIndexOK(t testing.TB, v *view) {
	t.Helper()
	if v.readOK() && !strings.HasPrefix(v.RowIndex, "ok") {
		t.Errorf("%s: Cassandra's reads through the row index differ: %s", v.Path, v.RowIndex)
	}
}

// scanAgrees says whether the sequential read saw exactly what the index-driven read saw.
func (v *view) scanAgrees() bool {
	field := func(s, name string) string {
		for _, f := range strings.Fields(s) {
			if strings.HasPrefix(f, name+"=") {
				return f
			}
		}
		return ""
	}
	return v.readOK() && strings.HasPrefix(v.Scan, "ok") && field(v.Read, "digest") == field(v.Scan, "digest")
}

// cassandra has Cassandra read, check the metadata of and verify (basic and extended) every
// sstable in one JVM.
func cassandra(t testing.TB, paths ...string) map[string]*view {
	t.Helper()
	return cassandraRanges(t, "", paths...)
}

// cassandraRanges is cassandra that also has Cassandra scan every sstable over each range of
// ranges alone (a token.RangeSet's String, e.g. "(-100,250],(300,-200]"; "" for none): the views'
// RangeScans, keyed by each range's text.
func cassandraRanges(t testing.TB, ranges string, paths ...string) map[string]*view {
	t.Helper()
	each := map[string]string{}
	for _, p := range paths {
		each[p] = ranges
	}
	return cassandraEach(t, each)
}

// cassandraEach is cassandraRanges with ranges of each path's own (path -> ranges' String; ""
// for none), in one run of the harness.
func cassandraEach(t testing.TB, ranges map[string]string) map[string]*view {
	t.Helper()
	args := []string{"check", "--extended"}
	var paths []string
	for p, spec := range ranges {
		paths = append(paths, p)
		if spec != "" {
			p += "::" + spec
		}
		args = append(args, p)
	}
	out, err := harness(t, args...)
	if err != nil {
		t.Fatalf("cassandra harness: %v", err)
	}
	views := parseCheck(out)
	for _, p := range paths {
		if views[p] == nil {
			t.Fatalf("cassandra harness said nothing about %s:\n%s", p, tail(out, 3000))
		}
	}
	return views
}

// parseCheck reads the output of the harness's check (its header documents the lines).
func parseCheck(out string) map[string]*view {
	views := map[string]*view{}
	var cur *view
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line := sc.Text()
		kind, rest, _ := strings.Cut(line, " ")
		if cur == nil && kind != "SSTABLE" {
			continue
		}
		switch kind {
		case "SSTABLE":
			cur = &view{Path: rest, RangeScans: map[string]*rangeScan{}}
			views[rest] = cur
		case "P":
			f := strings.Fields(rest)
			cur.Parts = append(cur.Parts, part{Key: f[0], Token: f[1], Digest: f[2], Line: line})
		case "READ":
			cur.Read = rest
		case "READKEYS":
			cur.ReadKeys, cur.ReadEmpty, cur.ReadKeysTruncated, _ = keyFields(rest)
		case "SCAN":
			cur.Scan = rest
		case "SCANKEYS":
			cur.ScanKeys, cur.ScanEmpty, cur.ScanKeysTruncated, _ = keyFields(rest)
		case "RSCAN":
			// RSCAN <range> ok|fail ...: a range's text holds no space.
			rng, res, _ := strings.Cut(rest, " ")
			verdict, msg, _ := strings.Cut(res, " ")
			rs := &rangeScan{OK: verdict == "ok", Msg: msg}
			if rs.OK {
				var f map[string]string
				rs.Keys, rs.EmptyKeys, rs.Truncated, f = keyFields(msg)
				fmt.Sscan(f["partitions"], &rs.Partitions)
				fmt.Sscan(f["empty"], &rs.Empty)
				rs.Digest = f["digest"]
			}
			cur.RangeScans[rng] = rs
		case "SCRUB":
			cur.Scrub = rest
		case "RIDX":
			cur.RowIndex = rest
		case "META":
			cur.Meta = rest
		case "VERIFY":
			mode, res, _ := strings.Cut(rest, " ")
			if mode == "basic" {
				cur.Basic = res
			} else {
				cur.Extended = res
			}
		}
	}
	return views
}

// keyFields reads the name=value fields of a READKEYS, SCANKEYS or RSCAN line: the key lists
// (keys=, emptykeys=, comma-separated hex), whether the line ends with "truncated", and every
// field by name.
func keyFields(s string) (keys, empty []string, truncated bool, fields map[string]string) {
	fields = map[string]string{}
	list := func(v string) []string {
		if v == "" {
			return nil
		}
		return strings.Split(v, ",")
	}
	for _, f := range strings.Fields(s) {
		if f == "truncated" {
			truncated = true
			continue
		}
		if name, v, ok := strings.Cut(f, "="); ok {
			fields[name] = v
		}
	}
	return list(fields["keys"]), list(fields["emptykeys"]), truncated, fields
}

// digests maps key hex to digest over the partitions of the views, failing on a key seen twice.
func digests(t testing.TB, views ...*view) map[string]string {
	t.Helper()
	m := map[string]string{}
	for _, v := range views {
		for _, p := range v.Parts {
			if _, dup := m[p.Key]; dup {
				t.Errorf("partition %s appears twice (again in %s)", p.Key, v.Path)
			}
			m[p.Key] = p.Digest
		}
	}
	return m
}

// inRanges keeps the parent's partitions whose token is in the ranges (Murmur3 unless a
// partitioner is given).
func inRanges(t testing.TB, v *view, ranges token.RangeSet, partitioner ...token.Partitioner) map[string]string {
	t.Helper()
	part := token.Murmur3
	if len(partitioner) > 0 {
		part = partitioner[0]
	}
	m := map[string]string{}
	for _, p := range v.Parts {
		var tok token.Token
		var err error
		if part.Name() == token.Murmur3Name {
			tok, err = part.ParseToken(p.Token)
		} else {
			var key []byte
			if key, err = hex.DecodeString(p.Key); err == nil {
				tok = part.Token(key)
			}
		}
		if err != nil {
			t.Fatalf("token %q: %v", p.Token, err)
		}
		if ranges.Contains(tok) {
			m[p.Key] = p.Digest
		}
	}
	return m
}

// sameDigests reports every partition whose Cassandra digest differs, is missing or is extra.
func sameDigests(t testing.TB, what string, want, got map[string]string) {
	t.Helper()
	var bad []string
	for k, d := range want {
		switch g, ok := got[k]; {
		case !ok:
			bad = append(bad, "missing "+k)
		case g != d:
			bad = append(bad, "differs "+k)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			bad = append(bad, "extra "+k)
		}
	}
	if len(bad) > 0 {
		sort.Strings(bad)
		t.Errorf("%s: Cassandra sees %d partition(s) differently (of %d): %s", what, len(bad), len(want), strings.Join(bad[:min(len(bad), 10)], ", "))
	}
}

// fixture is one sstable CQLSSTableWriter wrote.
type fixture struct {
	Table, Format, Compressor, Path string
}

var (
	fixOnce  sync.Once
	fixList  []fixture
	fixNotes []string
	fixErr   error
	// CREATE TABLE and CREATE TYPE statements by fixture table.
	fixSchema = map[string]string{}
	fixTypes  = map[string][]string{}
)

// fixtures writes the CQLSSTableWriter fixtures once per run: Cassandra 5.0 mode (BIG oa, BTI
// da) and Cassandra 4 compatibility mode (BIG nb).
func fixtures(t testing.TB) []fixture {
	t.Helper()
	fixOnce.Do(func() {
		for _, compat := range []string{"none", "4"} {
			out, err := harness(t, "write", "--out", filepath.Join(work, "fixtures-"+compat), "--compat", compat)
			if err != nil {
				fixErr = err
				return
			}
			for _, line := range strings.Split(out, "\n") {
				f := strings.Fields(line)
				switch {
				case len(f) == 5 && f[0] == "FIXTURE":
					fixList = append(fixList, fixture{Table: f[1], Format: f[2], Compressor: f[3], Path: f[4]})
				case len(f) > 2 && f[0] == "SCHEMA":
					fixSchema[f[1]] = strings.SplitN(line, " ", 3)[2]
				case len(f) > 2 && f[0] == "TYPE":
					fixTypes[f[1]] = append(fixTypes[f[1]], strings.SplitN(line, " ", 3)[2])
				case strings.HasPrefix(line, "REFUSED "):
					fixNotes = append(fixNotes, line)
				}
			}
		}
	})
	if fixErr != nil {
		t.Fatalf("writing fixtures with CQLSSTableWriter: %v", fixErr)
	}
	return fixList
}

// byTable groups fixtures by table directory, in first-seen order.
func byTable(fs []fixture) (names []string, tables map[string][]fixture) {
	tables = map[string][]fixture{}
	for _, f := range fs {
		if _, ok := tables[f.Table]; !ok {
			names = append(names, f.Table)
		}
		tables[f.Table] = append(tables[f.Table], f)
	}
	return names, tables
}

// keyLine is one line of `sluice sstable keys --json`.
type keyLine struct {
	Ordinal  int64  `json:"ordinal"`
	Key      string `json:"key"`
	Token    string `json:"token"`
	Position int64  `json:"position"`
	Filler   bool   `json:"filler"`
}

// fillersOf is the set of filler partitions (key hex) `sluice sstable keys` marks in path.
func fillersOf(t testing.TB, path string) map[string]bool {
	t.Helper()
	f := map[string]bool{}
	for _, k := range sluiceKeys(t, path) {
		if k.Filler {
			f[k.Key] = true
		}
	}
	return f
}

func sluiceKeys(t testing.TB, path string) []keyLine {
	t.Helper()
	out, err := sluice(t, "sstable", "keys", "--json", path)
	if err != nil {
		t.Fatal(err)
	}
	var ks []keyLine
	dec := json.NewDecoder(strings.NewReader(out))
	for dec.More() {
		var k keyLine
		if err := dec.Decode(&k); err != nil {
			t.Fatalf("keys --json %s: %v", path, err)
		}
		ks = append(ks, k)
	}
	return ks
}

// dataFiles lists the Data.db files under dir.
func dataFiles(t testing.TB, dir string) []string {
	t.Helper()
	var out []string
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, "-Data.db") {
			out = append(out, p)
		}
		return nil
	})
	sort.Strings(out)
	return out
}
