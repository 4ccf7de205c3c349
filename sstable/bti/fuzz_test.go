package bti

import (
	"bytes"
	"fmt"
	"slices"
	"testing"

	"github.com/sluicedb/sluice/sstable/token"
)

func FuzzOpenPartitionIndex(f *testing.F) {
	for _, s := range btiFixtures(&testing.T{}) {
		f.Add(s.Read(f, "Partitions.db"))
	}
	f.Add(buildIndex(f, murmurKeys(300)))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := OpenPartitionIndex(b)
		if err != nil {
			return
		}
		var prefixes [][]byte
		walkErr := p.Walk(func(e PartitionEntry) error {
			if len(prefixes) < 64 {
				prefixes = append(prefixes, bytes.Clone(e.Prefix))
			}
			return nil
		})
		// A walk that ends in an error may have yielded entries below the damage (a sparse
		// node's transitions out of order are found after its first child), which a binary
		// search cannot find: only a clean walk promises every entry to Lookup.
		for _, pr := range prefixes {
			if _, ok, err := p.Lookup(pr); walkErr == nil && err == nil && !ok {
				t.Errorf("walked prefix %x not found by Lookup", pr)
			}
		}
		p.Lookup(b[:min(len(b), 40)])
		// Read through small cache blocks, the same bytes must give the same entries, the
		// same error and the same lookups.
		want := walkAll(p)
		q, err := openPartitionIndexPaged(bytes.NewReader(b), int64(len(b)), 13, 2)
		if err != nil {
			t.Fatalf("paged open failed where the in-memory one did not: %v", err)
		}
		got := walkAll(q)
		if got.err != want.err || len(got.entries) != len(want.entries) {
			t.Fatalf("paged walk: %d entries, err %q; in memory %d, %q", len(got.entries), got.err, len(want.entries), want.err)
		}
		for i, e := range got.entries {
			if w := want.entries[i]; !bytes.Equal(e.Prefix, w.Prefix) || e.Position != w.Position || e.HashByte != w.HashByte || e.PayloadPos != w.PayloadPos {
				t.Fatalf("paged entry %d is %+v, in memory %+v", i, e, w)
			}
		}
		for _, k := range append(prefixes, b[:min(len(b), 40)]) {
			ge, gok, gerr := q.Lookup(k)
			we, wok, werr := p.Lookup(k)
			if fmt.Sprint(ge, gok, gerr) != fmt.Sprint(we, wok, werr) {
				t.Fatalf("paged Lookup(%x) = %+v, %v, %v; in memory %+v, %v, %v", k, ge, gok, gerr, we, wok, werr)
			}
		}
	})
}

func FuzzReadRowIndexEntry(f *testing.F) {
	for _, s := range btiFixtures(&testing.T{}) {
		rows := s.Read(f, "Rows.db")
		for _, k := range s.Keys(f) {
			if k.IndexPos >= 0 {
				f.Add(rows, k.IndexPos)
			}
		}
	}
	f.Fuzz(func(t *testing.T, b []byte, pos int64) {
		e, err := ReadRowIndexEntry(b, pos)
		if err != nil {
			return
		}
		if e.RootOffset < 0 || e.RootOffset >= e.Pos || e.End > int64(len(b)) {
			t.Fatalf("entry %+v out of bounds", e)
		}
		c := bytes.Clone(b)
		if err := PatchDataPosition(c, e, e.DataPosition); err != nil || !bytes.Equal(c, b) {
			t.Fatalf("patching the same value changed the file: %v", err)
		}
	})
}

func FuzzRowIndexWalk(f *testing.F) {
	for _, s := range btiFixtures(&testing.T{}) {
		rows := s.Read(f, "Rows.db")
		for _, k := range s.Keys(f) {
			if k.IndexPos >= 0 {
				f.Add(rows, k.IndexPos)
			}
		}
	}
	f.Fuzz(func(t *testing.T, b []byte, pos int64) {
		e, err := ReadRowIndexEntry(b, pos)
		if err != nil {
			return
		}
		var w RowIndexWalker
		w.Walk(b, e, func(RowIndexBlock) error { return nil })
	})
}

// FuzzPartitionIndexRoundTrip builds an index from arbitrary keys and reads it back.
func FuzzPartitionIndexRoundTrip(f *testing.F) {
	f.Add([]byte("a\x00b\x00\x00\x00abc\x00abd\x00\xff\xff"))
	f.Fuzz(func(t *testing.T, data []byte) {
		raw := bytes.Split(data, []byte{0})
		slices.SortFunc(raw, bytes.Compare)
		raw = slices.CompactFunc(raw, bytes.Equal)
		keys := make([]testKey, len(raw))
		for i, k := range raw {
			keys[i] = testKey{key: k, comparable: AppendDecoratedKey(nil, token.ByteOrdered.Token(k), k), pos: int64(i)*7 - 3}
		}
		verifyIndex(t, buildIndex(t, keys), keys)
	})
}
