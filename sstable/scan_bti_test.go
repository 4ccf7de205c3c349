package sstable_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/sluicedb/sluice/internal/testkit/fixtures"
	"github.com/sluicedb/sluice/sstable"
	"github.com/sluicedb/sluice/sstable/gen"
	"github.com/sluicedb/sluice/sstable/version"
)

// ScanIndex meets the partitions ScanPartitions does, with their positions, without reading
// a key; the keys asked for, any subset in order (every one, runs, one in many, a key behind
// one asked before), are the partitions' keys, and so are KeyAt's.
func TestScanIndexKeysOnDemand(t *testing.T) {
	v, _ := version.ParseWritable("da")
	var prefixes []string
	for i, o := range []gen.Options{
		{Partitions: 3000, PartitionSize: 512, RowSize: 128},
		{Partitions: 300, PartitionSize: 64 << 10, RowSize: 1 << 10, IndexBlockSize: 8 << 10},
		{Partitions: 40, PartitionSize: 2 << 20, RowSize: 4 << 10, ChunkLength: 4 << 10, Compressibility: 0.1},
		{Partitions: 1000, PartitionSize: 1 << 10, RowSize: 256, Compression: "none"},
	} {
		o.Version, o.Seed = v, uint64(70+i)
		res, err := gen.Generate(context.Background(), filepath.Join(t.TempDir(), fmt.Sprint(i)), o)
		if err != nil {
			t.Fatal(err)
		}
		prefixes = append(prefixes, res.Desc.Prefix())
	}
	for _, f := range fixtures.All(t) {
		if f.Format == "bti" {
			prefixes = append(prefixes, f.Prefix)
		}
	}
	rng := rand.New(rand.NewPCG(3, 3))
	for _, prefix := range prefixes {
		tb, err := sstable.Open(prefix)
		if err != nil {
			t.Fatal(err)
		}
		defer tb.Close()
		var want []sstable.Partition
		if err := tb.ScanPartitions(func(p *sstable.Partition) error {
			q := *p
			q.Key = bytes.Clone(p.Key)
			want = append(want, q)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		for _, pick := range []struct {
			name string
			ask  func(i int64) bool
		}{
			{"none", func(int64) bool { return false }},
			{"every", func(int64) bool { return true }},
			{"runs", func(i int64) bool { return i%100 < 40 }},
			{"one in seven", func(i int64) bool { return i%7 == 3 }},
			{"random", func(int64) bool { return rng.IntN(3) == 0 }},
		} {
			n := 0
			var prevPos int64 = -1
			err := tb.ScanIndex(func(e *sstable.IndexEntry) error {
				w := want[e.Ordinal]
				if e.Position != w.Position || e.IndexPos != w.IndexPos {
					t.Fatalf("%s: partition %d at %d (%d), want %d (%d)", prefix, e.Ordinal, e.Position, e.IndexPos, w.Position, w.IndexPos)
				}
				n++
				if pick.ask(e.Ordinal) {
					var p sstable.Partition
					if err := e.Partition(&p); err != nil {
						return err
					}
					if !bytes.Equal(p.Key, w.Key) || p.Token.Compare(w.Token) != 0 || p.Hash != w.Hash {
						t.Fatalf("%s (%s): partition %d: key %x, want %x", prefix, pick.name, e.Ordinal, p.Key, w.Key)
					}
					if e.Ordinal > 0 && rng.IntN(5) == 0 {
						// The key before, behind the cursor, is read at random.
						k, err := tb.KeyAt(prevPos)
						if err != nil || !bytes.Equal(k, want[e.Ordinal-1].Key) {
							t.Fatalf("%s: KeyAt(%d): %x, %v", prefix, prevPos, k, err)
						}
					}
				}
				prevPos = e.Position
				return nil
			})
			if err != nil || n != len(want) {
				t.Fatalf("%s (%s): %d partitions of %d: %v", prefix, pick.name, n, len(want), err)
			}
		}
	}
}
