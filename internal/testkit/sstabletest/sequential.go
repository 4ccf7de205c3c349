package sstabletest

import (
	"bytes"
	"fmt"

	"github.com/sluicedb/sluice/sstable"
	"github.com/sluicedb/sluice/sstable/rows"
	"github.com/sluicedb/sluice/sstable/schema"
	"github.com/sluicedb/sluice/sstable/token"
)

// Scanned is one partition as a sequential reader finds it: its key, token, position and
// whether it is a filler partition (sstable.IsFiller: it holds nothing after purging).
type Scanned struct {
	Key      []byte
	Token    token.Token
	Position int64
	Empty    bool
}

// ScanSequentially reads Data.db of the sstable at prefix as Cassandra 5.0's
// SSTableSimpleScanner reads a whole sstable for compaction or sstabledump: from position 0 to
// the data length, partition after partition, without the index, failing (as it does) on
// bytes that do not parse or on a key that does not sort after the one before.
func ScanSequentially(prefix string) ([]Scanned, error) {
	tb, err := sstable.Open(prefix)
	if err != nil {
		return nil, err
	}
	defer tb.Close()
	table, err := schema.Compile(tb.Statistics.Header)
	if err != nil {
		return nil, err
	}
	data := make([]byte, tb.DataLength())
	if _, err := tb.Data.ReadAt(data, 0); err != nil {
		return nil, err
	}
	var out []Scanned
	var cur rows.Cursor
	for pos := int64(0); pos < int64(len(data)); {
		err := cur.ResetTrailing(table, tb.Version(), data[pos:])
		n := 0
		for err == nil && cur.Next() {
			n++
		}
		if err == nil {
			err = cur.Err()
		}
		if err != nil || !cur.Done() {
			return out, fmt.Errorf("%s: the partition at %d does not parse: %v", prefix, pos, err)
		}
		s := Scanned{Key: append([]byte(nil), cur.Key()...), Position: pos,
			Empty: sstable.IsFiller(table, tb.Version(), data[pos:])}
		s.Token = tb.Partitioner.Token(s.Key)
		if k := len(out); k > 0 && token.CompareKeys(out[k-1].Token, out[k-1].Key, s.Token, s.Key) >= 0 {
			return out, fmt.Errorf("%s: invalid key order at %d: %x (token %s) after %x (token %s)",
				prefix, pos, s.Key, s.Token, out[k-1].Key, out[k-1].Token)
		}
		out = append(out, s)
		pos += int64(cur.End())
	}
	return out, nil
}

// CheckScannable checks that a sequential reader reads exactly the partitions keys (the
// sstable's index order) of the sstable at prefix, after empty fillers (ScanMatches), and that
// sstable.Verify agrees that it is scannable.
func CheckScannable(prefix string, keys [][]byte) error {
	if err := ScanMatches(prefix, keys); err != nil {
		return err
	}
	rep, err := sstable.Verify(prefix, sstable.VerifyOptions{})
	if err != nil {
		return err
	}
	if !rep.Scannable {
		return fmt.Errorf("%s: verify says it is not scannable (%d dead regions, head filled %v)", prefix, rep.DeadRegions, rep.HeadFilled)
	}
	return nil
}

// Keys returns the keys of partitions, in order.
func Keys(partitions []Partition) [][]byte {
	keys := make([][]byte, len(partitions))
	for i, p := range partitions {
		keys[i] = p.Key
	}
	return keys
}

// ScanMatches checks what a sequential reader makes of the sstable at prefix: exactly the
// partitions its index addresses, in order and at their index positions (fillers included),
// of which the ones holding data are keys (the sstable's data partitions, in order) and the
// others are empty.
func ScanMatches(prefix string, keys [][]byte) error {
	scanned, err := ScanSequentially(prefix)
	if err != nil {
		return err
	}
	tb, err := sstable.Open(prefix)
	if err != nil {
		return err
	}
	defer tb.Close()
	var index []Scanned
	if err := tb.ScanPartitions(func(p *sstable.Partition) error {
		index = append(index, Scanned{Key: append([]byte(nil), p.Key...), Position: p.Position})
		return nil
	}); err != nil {
		return err
	}
	if len(scanned) != len(index) {
		return fmt.Errorf("%s: a sequential scan finds %d partitions, the index %d", prefix, len(scanned), len(index))
	}
	var data [][]byte
	for i, s := range scanned {
		if !bytes.Equal(s.Key, index[i].Key) || s.Position != index[i].Position {
			return fmt.Errorf("%s: sequential partition %d is %x at %d, the index says %x at %d", prefix, i, s.Key, s.Position, index[i].Key, index[i].Position)
		}
		if !s.Empty {
			data = append(data, s.Key)
		}
	}
	if len(data) != len(keys) {
		return fmt.Errorf("%s: a sequential scan finds %d partitions holding data, want %d", prefix, len(data), len(keys))
	}
	for i, k := range keys {
		if !bytes.Equal(data[i], k) {
			return fmt.Errorf("%s: sequential data partition %d is %x, want %x", prefix, i, data[i], k)
		}
	}
	return nil
}
