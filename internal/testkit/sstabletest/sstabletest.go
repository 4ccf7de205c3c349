// Package sstabletest holds test helpers shared by the packages that move sstables (split,
// streaming): reading every partition of an sstable with its exact Data.db bytes, so that a
// test can check a child or a fetched sstable against its parent byte for byte. Tests only.
package sstabletest

import (
	"testing"

	"github.com/sluicedb/sluice/sstable"
	"github.com/sluicedb/sluice/sstable/rows"
	"github.com/sluicedb/sluice/sstable/schema"
	"github.com/sluicedb/sluice/sstable/token"
)

// Partition is one partition as a test sees it: its key, token and exact bytes.
type Partition struct {
	Key   []byte
	Token token.Token
	Bytes []byte
	// Filler marks an empty partition (ReadAll leaves them out).
	Filler bool
}

// ReadAll returns every partition of the sstable at prefix with its Data.db bytes. A partition
// ends at its end-of-partition flag, found with the row cursor: in a multi-run sstable a dead
// region may lie between it and the next partition.
func ReadAll(t testing.TB, prefix string) []Partition {
	t.Helper()
	tb, err := sstable.Open(prefix)
	if err != nil {
		t.Fatal(err)
	}
	defer tb.Close()
	var out []Partition
	var pos []int64
	if err := tb.ScanPartitions(func(p *sstable.Partition) error {
		tok := p.Token
		if tok.Bytes != nil {
			tok.Bytes = append([]byte(nil), tok.Bytes...)
		}
		out = append(out, Partition{Key: append([]byte(nil), p.Key...), Token: tok})
		pos = append(pos, p.Position)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	pos = append(pos, tb.DataLength())
	table, err := schema.Compile(tb.Statistics.Header)
	if err != nil {
		t.Fatal(err)
	}
	var cur rows.Cursor
	for i := range out {
		b := make([]byte, pos[i+1]-pos[i])
		if _, err := tb.Data.ReadAt(b, pos[i]); err != nil {
			t.Fatal(err)
		}
		err := cur.ResetTrailing(table, tb.Version(), b)
		for err == nil && cur.Next() {
		}
		if err == nil {
			err = cur.Err()
		}
		if err != nil || !cur.Done() {
			t.Fatalf("%s: partition %x at %d: %v (no end-of-partition flag before the next partition)", prefix, out[i].Key, pos[i], err)
		}
		out[i].Bytes = b[:cur.End()]
		out[i].Filler = sstable.IsFiller(table, tb.Version(), b)
	}
	// Filler partitions (empty: what sluice puts where a zero-copy child's runs leave a gap)
	// are not data.
	kept := out[:0]
	for _, p := range out {
		if !p.Filler {
			kept = append(kept, p)
		}
	}
	return kept
}
