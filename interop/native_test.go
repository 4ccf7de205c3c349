package interop

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sluicedb/sluice/sstable/token"
)

// cassandraNative holds Cassandra's view of one sstable (from cassandraRanges with ranges'
// String) to the project's rule: every file sluice writes is an ordinary sstable to every
// Cassandra reader. It returns every violation, each naming path; none means
//
//   - the index-driven read (READ), the metadata check (META) and sstableverify (and
//     sstableverify -e, when run) pass; sstablescrub's work on a copy finds no bad partition and
//     writes every one again (or drops it as empty: an empty filler);
//   - the sequential read from position 0 (SCAN: compaction's, sstabledump's) passes, sees the
//     index-driven read's content (digest) and returns its keys (SCANKEYS against the P lines) in
//     order;
//   - for every range of ranges, getScanner(range) (RSCAN: partial streaming, repair validation,
//     cleanup) passes and returns exactly the index-driven read's partitions whose token the range
//     holds, in order, with their content (digest);
//   - every partition the index-driven read returns lies in one of ranges (skipped when ranges is
//     empty);
//   - no empty partition is read anywhere but the fillers (key hex; may be nil), which may appear
//     in any read and any range but must be empty wherever they appear.
//
// Key lists the harness truncated are compared over what they list.
func cassandraNative(t testing.TB, v *view, path string, ranges token.RangeSet, fillers map[string]bool) []string {
	t.Helper()
	var bad []string
	add := func(format string, args ...any) { bad = append(bad, path+": "+fmt.Sprintf(format, args...)) }
	if v == nil {
		add("the Cassandra harness said nothing about it")
		return bad
	}
	ok := func(s string) bool { return strings.HasPrefix(s, "ok") }
	if !v.readOK() {
		add("Cassandra's index-driven read fails: %s", v.Read)
	}
	if !v.metaOK() {
		add("Cassandra's metadata check fails: %s", v.Meta)
	}
	if !ok(v.Basic) {
		add("sstableverify rejects it: %s", v.Basic)
	}
	if v.Extended != "" && !ok(v.Extended) {
		add("sstableverify -e rejects it: %s", v.Extended)
	}
	if !ok(v.Scan) {
		add("Cassandra's sequential read from position 0 (compaction's) fails: %s", v.Scan)
	}
	if !v.readOK() {
		return bad // the rest holds the other reads to the index-driven one
	}
	// sstablescrub finds nothing to fix: no bad partition, and every partition written again
	// (real ones, and fillers holding expired cells) or dropped as empty (empty fillers).
	// Cassandra 5.0.7's scrubber, run offline here, fails with its own programming errors on
	// some of Cassandra's own CQLSSTableWriter files (a NullPointerException, "c1" is null, on
	// clustered tables; a ClassCastException of a RangeTombstoneBoundMarker on tables with range
	// deletions), sluice's outputs of them alike, and counts those partitions bad: there only its
	// walk is held (every partition met once, nothing misparsed). A data error is never excused.
	var good, badParts, empty int
	scrubNPE := (strings.Contains(v.Scrub, "NullPointerException") || strings.Contains(v.Scrub, "ClassCastException")) &&
		!strings.Contains(v.Scrub, "CorruptSSTableException")
	if n, _ := fmt.Sscanf(v.Scrub, "ok good=%d bad=%d empty=%d", &good, &badParts, &empty); n != 3 {
		add("sstablescrub: %s", v.Scrub)
	} else if badParts != 0 && !scrubNPE || good+badParts < len(v.Parts) || good+badParts+empty != len(v.ReadKeys) && !v.ReadKeysTruncated {
		add("sstablescrub: %d partitions good, %d bad, %d empty, of %d (%d with data): %.300s", good, badParts, empty, len(v.ReadKeys), len(v.Parts), v.Scrub)
	}

	idx := make([]string, len(v.Parts))
	for i, p := range v.Parts {
		idx[i] = p.Key
		if fillers[p.Key] {
			add("filler partition %s holds data in the index-driven read (%s)", p.Key, strings.TrimPrefix(p.Line, "P "))
		}
	}
	// The index-driven read's own key list: its empty partitions are fillers or nothing.
	if d := sameKeySeq(idx, v.ReadKeys, v.ReadEmpty, v.ReadKeysTruncated, fillers); d != "" {
		add("the index-driven read's keys (READKEYS) differ from its partitions with data: %s", d)
	}
	if ok(v.Scan) {
		if !v.scanAgrees() {
			add("the sequential read sees other content than the index-driven read: SCAN %s / READ %s", tail(v.Scan, 200), tail(v.Read, 200))
		}
		if d := sameKeySeq(idx, v.ScanKeys, v.ScanEmpty, v.ScanKeysTruncated, fillers); d != "" {
			add("the sequential read's keys differ from the index-driven read's: %s", d)
		}
	}
	if len(ranges) == 0 {
		return bad
	}

	part := token.Murmur3
	if ranges[0].Left.Kind == token.KindBytes {
		part = token.ByteOrdered
	}
	toks := make([]token.Token, len(v.Parts))
	for i, p := range v.Parts {
		var err error
		if part == token.Murmur3 {
			toks[i], err = part.ParseToken(p.Token)
		} else {
			var key []byte
			if key, err = hex.DecodeString(p.Key); err == nil {
				toks[i] = part.Token(key)
			}
		}
		if err != nil {
			add("partition %s: token %q: %v", p.Key, p.Token, err)
			return bad
		}
	}
	var outside []string
	for i, p := range v.Parts {
		if !fillers[p.Key] && !ranges.Contains(toks[i]) {
			outside = append(outside, p.Key+"@"+p.Token)
		}
	}
	if len(outside) > 0 {
		add("%d of %d partitions lie outside the ranges %s: %s", len(outside), len(v.Parts), ranges, strings.Join(outside[:min(len(outside), 5)], ", "))
	}
	for _, r := range ranges {
		rs := v.RangeScans[r.String()]
		switch {
		case rs == nil:
			add("no range scan of %s (run the harness with --ranges)", r)
			continue
		case !rs.OK:
			add("Cassandra's scan of range %s (streaming's, repair's, cleanup's) fails: %s", r, rs.Msg)
			continue
		}
		var want []string
		h := sha256.New()
		for i, p := range v.Parts {
			if r.Contains(toks[i]) {
				want = append(want, p.Key)
				h.Write([]byte(p.Line + "\n"))
			}
		}
		if d := sameKeySeq(want, rs.Keys, rs.EmptyKeys, rs.Truncated, fillers); d != "" {
			add("Cassandra's scan of range %s returns other keys than the index-driven read's in the range: %s", r, d)
		} else if digest := hex.EncodeToString(h.Sum(nil)[:16]); rs.Partitions != len(want) || rs.Digest != digest {
			add("Cassandra's scan of range %s returns other content than the index-driven read's %d partitions in the range (digest %s): partitions=%d digest=%s",
				r, len(want), digest, rs.Partitions, rs.Digest)
		}
	}
	return bad
}

// sameKeySeq compares a read's key list (got, with its empty partitions) to want, the
// index-driven read's keys with data: fillers are dropped from got but must be empty, every
// other key must be one of want's, in want's order. A truncated got is compared over its
// length. It returns "" or the first difference.
func sameKeySeq(want, got, empty []string, truncated bool, fillers map[string]bool) string {
	isEmpty := map[string]bool{}
	for _, k := range empty {
		isEmpty[k] = true
	}
	var kept []string
	for _, k := range got {
		switch {
		case fillers[k] && !isEmpty[k]:
			return "filler partition " + k + " is not empty"
		case fillers[k]:
		case isEmpty[k]:
			return "empty partition " + k + " (not a filler)"
		default:
			kept = append(kept, k)
		}
	}
	n := len(want)
	if truncated && len(kept) < n {
		n = len(kept)
	}
	for i := 0; i < n && i < len(kept); i++ {
		if kept[i] != want[i] {
			return fmt.Sprintf("key #%d is %s, want %s", i, kept[i], want[i])
		}
	}
	if len(kept) != n {
		if len(kept) > n {
			return fmt.Sprintf("%d keys, want %d (first extra %s)", len(kept), n, kept[n])
		}
		return fmt.Sprintf("%d keys, want %d (first missing %s)", len(kept), n, want[len(kept)])
	}
	return ""
}

// The parser and cassandraNative against a Cassandra-written sstable (BIG oa, Murmur3, 10000
// partitions, no sluice output): two ranges that split its token span (the second wraps) and one
// that holds none of its partitions. Cassandra's scans of the two partition its keys, in order,
// and cassandraNative finds nothing; a range set that leaves keys out, a key wrongly called a
// filler and a range scan with two keys swapped are each reported.
func TestNativeRangeScansOfCassandraFixture(t *testing.T) {
	need(t)
	path := filepath.Join(repo, "..", "shared", "testdata", "cassandra", "sstable-transformer", "oa", "spark_test.testtable_10k", "oa-13-big-Data.db")
	if _, err := os.Stat(path); err != nil {
		t.Skipf("fixture: %v", err)
	}
	// A first read for the tokens to cut at.
	plain := cassandra(t, path)[path]
	if !plain.readOK() || len(plain.Parts) < 4 {
		t.Fatalf("Cassandra cannot read its own fixture: %s", plain.Read)
	}
	tok := func(i int) token.Token {
		tk, err := token.Murmur3.ParseToken(plain.Parts[i].Token)
		if err != nil {
			t.Fatal(err)
		}
		return tk
	}
	first, mid, last := tok(0), tok(len(plain.Parts)/2), tok(len(plain.Parts)-1)
	if first.Long == math.MinInt64 || last.Long == math.MaxInt64 {
		t.Skip("fixture tokens at the ends of the ring")
	}
	below := token.Token{Kind: token.KindMurmur3, Long: first.Long - 1}
	lower := token.Range{Left: below, Right: mid} // (first-1, mid]: the lower half
	upper := token.Range{Left: mid, Right: below} // (mid, first-1]: wraps; the upper half
	none := token.Range{Left: last, Right: token.Token{Kind: token.KindMurmur3, Long: math.MaxInt64}}
	ranges := token.RangeSet{lower, upper, none}

	v := cassandraRanges(t, ranges.String(), path)[path]
	for _, r := range ranges {
		if rs := v.RangeScans[r.String()]; rs != nil {
			t.Logf("RSCAN %s: ok=%v partitions=%d empty=%d keys=%d truncated=%v digest=%s", r, rs.OK, rs.Partitions, rs.Empty, len(rs.Keys), rs.Truncated, rs.Digest)
		}
	}
	if bad := cassandraNative(t, v, path, ranges, nil); len(bad) > 0 {
		t.Errorf("Cassandra's own sstable is not ordinary to cassandraNative:\n%s", strings.Join(bad, "\n"))
	}
	lo, up, no := v.RangeScans[lower.String()], v.RangeScans[upper.String()], v.RangeScans[none.String()]
	if lo == nil || up == nil || no == nil {
		t.Fatalf("range scans missing: %v", v.RangeScans)
	}
	var readKeys []string
	for _, p := range v.Parts {
		readKeys = append(readKeys, p.Key)
	}
	if len(lo.Keys) == 0 || len(up.Keys) == 0 || len(no.Keys) != 0 || !no.OK {
		t.Errorf("range scans: %d keys below, %d above, %d in %s (want some, some, none)", len(lo.Keys), len(up.Keys), len(no.Keys), none)
	}
	if !slices.Equal(append(slices.Clone(lo.Keys), up.Keys...), readKeys) {
		t.Errorf("the scans of %s and %s do not partition the index-driven read's %d keys in order (%d + %d)", lower, upper, len(readKeys), len(lo.Keys), len(up.Keys))
	}
	if !slices.Equal(v.ScanKeys, readKeys) || !slices.Equal(v.ReadKeys, readKeys) {
		t.Errorf("SCANKEYS (%d) / READKEYS (%d) differ from the P lines (%d)", len(v.ScanKeys), len(v.ReadKeys), len(readKeys))
	}

	// The checks can fail.
	mustReport := func(what, want string, bad []string) {
		t.Helper()
		for _, b := range bad {
			if strings.Contains(b, want) && strings.HasPrefix(b, path+": ") {
				t.Logf("%s: reported: %s", what, tail(strings.TrimPrefix(b, path+": "), 300))
				return
			}
		}
		t.Errorf("%s: want a violation containing %q, got %q", what, want, bad)
	}
	mustReport("only the lower half's range", "lie outside the ranges", cassandraNative(t, v, path, token.RangeSet{lower}, nil))
	mustReport("a key with data called a filler", "holds data in the index-driven read", cassandraNative(t, v, path, ranges, map[string]bool{readKeys[1]: true}))
	swapped := *v
	swapped.RangeScans = map[string]*rangeScan{}
	for k, rs := range v.RangeScans {
		c := *rs
		swapped.RangeScans[k] = &c
	}
	ks := slices.Clone(lo.Keys)
	ks[0], ks[1] = ks[1], ks[0]
	swapped.RangeScans[lower.String()].Keys = ks
	mustReport("a range scan with two keys swapped", "returns other keys", cassandraNative(t, &swapped, path, ranges, nil))
	bigger := token.Range{Left: below, Right: tok(len(plain.Parts)/2 + 1)}
	swapped.RangeScans[bigger.String()] = lo // the lower half's scan, one key short of this range
	mustReport("a range scan one key short", "first missing "+plain.Parts[len(plain.Parts)/2+1].Key, cassandraNative(t, &swapped, path, token.RangeSet{bigger, upper}, nil))
}
