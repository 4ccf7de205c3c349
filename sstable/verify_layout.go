package sstable

import (
	"fmt"
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

// badChunk is a chunk that failed its check in the data pass, with why.
type badChunk struct {
	chunk int
	err   error
}

// blameChunkOffsets reports the chunks that failed their check, once each damage, on the
// component at fault. A damaged byte of Data.db breaks one chunk: that chunk is reported on
// Data.db. A wrong CompressionInfo.db offset moves the boundary between two chunks, so both
// fail: that is one line on CompressionInfo.db at the offset's entry. When Data.db matches its
// Digest, Data.db itself (inline CRCs included) is intact and every failing chunk was cut at
// the wrong place or checked against the wrong checksum: CompressionInfo.db or CRC.db is blamed.
func (v *verifier) blameChunkOffsets(bad []badChunk) {
	dataPath := v.t.Path(descriptor.Data)
	ci := v.t.Compression
	for i := 0; i < len(bad); i++ {
		k := bad[i].chunk
		run := i
		for run+1 < len(bad) && bad[run+1].chunk == bad[run].chunk+1 {
			run++
		}
		switch {
		case ci != nil && (run > i || v.dataIntact):
			// The entry both failing chunks share, or the one chunk's own.
			entry := k
			if run > i {
				entry = k + 1
			}
			why := fmt.Sprintf("chunks %d to %d fail their checks", k, bad[run].chunk)
			if run == i {
				why = fmt.Sprintf("chunk %d fails its check (%v)", k, detail(bad[i].err))
			}
			if v.dataIntact {
				why += ", though Data.db matches Digest.crc32"
			}
			v.add(v.t.Path(descriptor.CompressionInfo), v.ciOffsetsAt+8*int64(entry), "chunk %d offset %d disagrees with Data.db: %s", entry, ci.Offsets[entry], why)
			i = run
		case ci == nil && v.dataIntact && v.t.CRC != nil:
			v.add(v.t.Path(descriptor.CRC), 4+4*int64(k), "CRC of chunk %d disagrees with Data.db, which matches Digest.crc32: %v", k, detail(bad[i].err))
		default:
			v.addErr(dataPath, bad[i].err)
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
