package bti

import (
	"bytes"
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
		p.Walk(func(e PartitionEntry) error {
			if len(prefixes) < 64 {
				prefixes = append(prefixes, bytes.Clone(e.Prefix))
			}
			return nil
		})
		for _, pr := range prefixes {
			if _, ok, err := p.Lookup(pr); err == nil && !ok {
				t.Errorf("walked prefix %x not found by Lookup", pr)
			}
		}
		p.Lookup(b[:min(len(b), 40)])
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
