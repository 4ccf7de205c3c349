package sstable

import (
	"math"

	"github.com/sluicedb/sluice/sstable/bti"
	"github.com/sluicedb/sluice/sstable/descriptor"
	"github.com/sluicedb/sluice/sstable/stats"
)

// checkChunkLayout checks CompressionInfo.db against the Data.db it describes, so a damaged
// chunk offset is blamed on CompressionInfo.db rather than on the chunks it misplaces: every
// chunk must hold at least its 4-byte CRC, the last one must end inside the file, and
// maxCompressedLength is either "never store raw" or at most the chunk length
// (CompressionParams only allows min_compress_ratio 0 or >= 1).
func (v *verifier) checkChunkLayout() {
	ci := v.t.Compression
	if ci == nil {
		// ChecksummedSequentialWriter checksums slices of its buffer size, a power of two.
		if c := v.t.CRC; c != nil && (c.ChunkLength <= 0 || c.ChunkLength&(c.ChunkLength-1) != 0) {
			v.add(v.t.Path(descriptor.CRC), 0, "chunk length %d is not a power of two", c.ChunkLength)
		}
		return
	}
	path := v.t.Path(descriptor.CompressionInfo)
	v.ciOffsetsAt = v.offsetsArrayStart()
	if v.t.Version().HasMaxCompressedLength() {
		m := ci.MaxCompressedLength
		if m != math.MaxInt32 && (m <= 0 || int(m) > ci.ChunkLength) {
			v.add(path, -1, "maxCompressedLength %d is neither %d nor within (0, chunk length %d]", m, math.MaxInt32, ci.ChunkLength)
		}
	}
	for i, off := range ci.Offsets {
		end := v.t.DataFileLength
		if i+1 < len(ci.Offsets) {
			end = ci.Offsets[i+1]
		}
		if off < 0 || off+4 > end {
			v.add(path, v.ciOffsetsAt+8*int64(i), "chunk %d offset %d leaves no room for its CRC before %d", i, off, end)
		}
	}
}

// offsetsArrayStart is where the chunk offsets start in CompressionInfo.db: they are its last
// 8*chunkCount bytes.
func (v *verifier) offsetsArrayStart() int64 {
	ci := v.t.Compression
	size := int64(len(ci.Append(nil, v.t.Version())))
	return size - 8*int64(len(ci.Offsets))
}

// blameChunkOffsets names CompressionInfo.db when two neighbouring chunks fail: a single
// damaged byte of Data.db breaks one chunk, but a wrong offset moves the boundary between two.
//
// When Data.db matches its Digest, Data.db itself (inline CRCs included) is intact, so any chunk
// that fails its check was cut at the wrong place or checked against the wrong checksum: the
// fault is in CompressionInfo.db or CRC.db.
func (v *verifier) blameChunkOffsets(bad []int) {
	if v.dataIntact && len(bad) > 0 {
		file := v.t.Path(descriptor.CRC)
		if v.t.Compression != nil {
			file = v.t.Path(descriptor.CompressionInfo)
		}
		v.add(file, -1, "Data.db matches Digest.crc32, yet chunk %d fails its check: the chunk metadata is wrong", bad[0])
	}
	if v.t.Compression == nil {
		return
	}
	path := v.t.Path(descriptor.CompressionInfo)
	for i := 1; i < len(bad); i++ {
		if bad[i] == bad[i-1]+1 {
			k := bad[i]
			v.add(path, v.ciOffsetsAt+8*int64(k), "chunk %d offset %d disagrees with Data.db: chunks %d and %d both fail their checks", k, v.t.Compression.Offsets[k], k-1, k)
		}
	}
}

// newSizeHistogram is an empty partition-size histogram shaped like the one in Statistics.db.
func (v *verifier) newSizeHistogram() *stats.EstimatedHistogram {
	n := stats.PartitionSizeBuckets5 + 1
	if s := v.t.Statistics.Stats; s != nil {
		n = len(s.EstimatedPartitionSize.Counts)
	}
	h := stats.NewEstimatedHistogram(n)
	return &h
}

// checkSizeHistogram compares Statistics.db's partition size histogram with the sizes the index
// implies. Cassandra records each partition's exact serialized size (end - start), so the two
// agree bucket for bucket on a healthy sstable; sluice's split children recompute it likewise.
func (v *verifier) checkSizeHistogram(h *stats.EstimatedHistogram, count int64) {
	s := v.t.Statistics.Stats
	if s == nil {
		return
	}
	path := v.t.Path(descriptor.Statistics)
	// Every writer uses EstimatedHistogram's fixed bucket offsets; other offsets are damage.
	for name, hist := range map[string]stats.EstimatedHistogram{
		"partition size": s.EstimatedPartitionSize, "cells per partition": s.EstimatedCellPerPartitionCount} {
		std := stats.NewEstimatedHistogram(len(hist.Counts))
		for i, o := range hist.Offsets {
			if o != std.Offsets[i] {
				v.add(path, -1, "%s histogram bucket %d has offset %d, not the standard %d", name, i, o, std.Offsets[i])
				break
			}
		}
	}
	if c := s.EstimatedCellPerPartitionCount.Total(); c != count {
		v.add(path, -1, "cells-per-partition histogram counts %d partitions, the index has %d", c, count)
	}
	if total := s.EstimatedPartitionSize.Total(); total != count {
		v.add(path, -1, "partition size histogram counts %d partitions, the index has %d", total, count)
		return
	}
	for i, c := range s.EstimatedPartitionSize.Counts {
		if i < len(h.Counts) && h.Counts[i] != c {
			v.add(path, -1, "partition size histogram bucket %d holds %d partitions, the index positions give %d", i, c, h.Counts[i])
			return
		}
	}
}

// rowIndexChecker walks the row index trie of each BTI partition that has one.
type rowIndexChecker struct {
	walker bti.RowIndexWalker
	rows   []byte
}

func (rc *rowIndexChecker) check(v *verifier, p *Partition, _ *bti.PartitionEntry) {
	path := v.t.Path(descriptor.Rows)
	re, err := bti.ReadRowIndexEntry(v.btiRows, p.IndexPos)
	if err != nil {
		v.addErr(path, err)
		return
	}
	var n int
	prev := int64(-1)
	err = rc.walker.Walk(v.btiRows, re, func(b bti.RowIndexBlock) error {
		if b.Offset <= prev {
			v.add(path, re.Pos, "row index of partition %d: block offset %d is not after %d", p.Ordinal, b.Offset, prev)
		}
		prev = b.Offset
		n++
		return nil
	})
	if err != nil {
		v.addErr(path, err)
		return
	}
	// Cassandra writes one separator per block plus the end separator.
	if n != re.BlockCount+1 {
		v.add(path, re.Pos, "row index of partition %d has %d separators for %d blocks", p.Ordinal, n, re.BlockCount)
	}
}
