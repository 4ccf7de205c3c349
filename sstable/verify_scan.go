package sstable

import (
	"github.com/sluicedb/sluice/sstable/rows"
	"github.com/sluicedb/sluice/sstable/schema"
	"github.com/sluicedb/sluice/sstable/token"
	"github.com/sluicedb/sluice/sstable/version"
)

// filledHead reports whether b, the Data.db bytes before the first partition (tok, key),
// parses as empty partitions (no deletion, static row, row or marker) in strictly increasing
// key order, all sorting before the first partition: what sluice writes in a zero-copy child's
// dead head so that a sequential reader reads only partitions compaction drops there.
func filledHead(b []byte, t *schema.Table, v version.Version, p token.Partitioner, tok token.Token, key []byte) bool {
	var cur rows.Cursor
	var prevTok token.Token
	var prevKey []byte
	for off := 0; off < len(b); off += cur.End() {
		if cur.ResetTrailing(t, v, b[off:]) != nil || cur.Next() || cur.Err() != nil || !cur.Done() {
			return false
		}
		if !cur.Deletion().IsLive() {
			return false
		}
		if s := cur.Static(); s != nil && !s.IsEmpty() {
			return false
		}
		k := cur.Key()
		kt := p.Token(k)
		if token.CompareKeys(kt, k, tok, key) >= 0 || (prevKey != nil && token.CompareKeys(prevTok, prevKey, kt, k) >= 0) {
			return false
		}
		prevTok, prevKey = kt, append(prevKey[:0], k...)
		if prevTok.Bytes != nil {
			prevTok.Bytes = prevKey
		}
	}
	return true
}
