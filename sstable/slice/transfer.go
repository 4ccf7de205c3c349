package slice

import (
	"fmt"

	"github.com/sluicedb/sluice/internal/fsx"
	"github.com/sluicedb/sluice/sstable"
	"github.com/sluicedb/sluice/sstable/bigindex"
	"github.com/sluicedb/sluice/sstable/bti"
	"github.com/sluicedb/sluice/sstable/compress"
	"github.com/sluicedb/sluice/sstable/descriptor"
	"github.com/sluicedb/sluice/sstable/encoding"
	"github.com/sluicedb/sluice/sstable/stats"
	"github.com/sluicedb/sluice/sstable/token"
	"github.com/sluicedb/sluice/sstable/version"
)

// Partial is what a sender ships for one child so that the receiver can rebuild it without
// the parent: the run of parent Data.db bytes (verbatim chunks, no head pad), the child's
// rebased CompressionInfo, the index slice (one record per partition, parent positions) and,
// for BTI, the child's slice of the parent's Rows.db with record positions relative to it.
type Partial struct {
	Plan  ChildPlan
	Run   Run
	Info  *compress.Info // the child's CompressionInfo.db; nil for an uncompressed parent
	Index []byte         // index records (AppendIndexRecord)
	Rows  []byte         // BTI only
}

// Partials plans the children of parent for ranges and gathers, in one index pass, what each
// needs shipped. Data.db bytes are not read: the caller sends Run.SrcOff..Run.SrcEnd itself.
func Partials(parent *sstable.Table, ranges token.RangeSet) ([]Partial, error) {
	ps, err := NewPieces(parent.Partitioner, ranges)
	if err != nil {
		return nil, err
	}
	plans, err := PlanTable(parent, ps, ranges)
	if err != nil {
		return nil, err
	}
	spec, err := SpecOf(parent)
	if err != nil {
		return nil, err
	}
	out := make([]Partial, len(plans))
	for i, p := range plans {
		out[i].Plan = p
		if parent.Compression != nil {
			out[i].Run = LayoutCompressed(parent.Compression, parent.DataFileLength, p.Lo, p.Hi, 1)
			out[i].Info = out[i].Run.Info(parent.Compression)
		} else {
			out[i].Run = LayoutUncompressed(p.Lo, p.Hi, 1)
		}
	}
	var (
		k                 = 0
		lastEnd           int64
		rowsCut, rowsEnd  int64
		inChild           bool
		rowEntry          bti.RowIndexEntry
		isBTI             = spec.ParentRows != nil
		finishChildRowsAt = func(i int) {
			if isBTI {
				out[i].Rows = append([]byte(nil), spec.ParentRows[rowsCut:rowsEnd]...)
			}
		}
	)
	err = parent.ScanPartitions(func(pt *sstable.Partition) error {
		if inChild && pt.Ordinal >= out[k].Plan.FirstOrdinal+out[k].Plan.Partitions {
			finishChildRowsAt(k)
			inChild = false
			k++
		}
		if !inChild && k < len(out) && pt.Ordinal == out[k].Plan.FirstOrdinal {
			inChild = true
			rowsCut = lastEnd &^ 4095
			rowsEnd = rowsCut
		}
		indexPos := int64(-1)
		if pt.IndexPos >= 0 && isBTI {
			var err error
			if rowEntry, err = bti.ReadRowIndexEntry(spec.ParentRows, pt.IndexPos); err != nil {
				return err
			}
			lastEnd = rowEntry.End
			if inChild {
				rowsEnd = max(rowsEnd, rowEntry.End)
				indexPos = pt.IndexPos - rowsCut
			}
		}
		if inChild {
			out[k].Index = AppendIndexRecord(out[k].Index, pt.Key, pt.Position, indexPos, pt.Promoted)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if inChild {
		finishChildRowsAt(k)
	}
	return out, nil
}

// AppendIndexRecord appends one index-slice record: the key, the parent Data.db position, the
// Rows.db entry position within the shipped rows slice (-1 when none, and always for BIG) and
// the BIG promoted index verbatim.
//
//	uvint keyLength, key, uvint position, vint indexPos, uvint promotedLength, promoted
func AppendIndexRecord(dst, key []byte, position, indexPos int64, promoted []byte) []byte {
	dst = encoding.AppendVintBytes(dst, key)
	dst = encoding.AppendUVint(dst, uint64(position))
	dst = encoding.AppendVint(dst, indexPos)
	return encoding.AppendVintBytes(dst, promoted)
}

// ForEachIndexRecord decodes an index slice, calling fn with each partition (token computed
// with p). The Partition is reused between calls. A malformed slice is an error with its
// offset: it comes from a peer.
func ForEachIndexRecord(slice []byte, p token.Partitioner, fn func(*sstable.Partition) error) error {
	r := encoding.NewReader(slice)
	var pt sstable.Partition
	for r.Len() > 0 {
		pt.Key = r.VintBytes()
		pt.Position = int64(r.UVint())
		pt.IndexPos = r.Vint()
		pt.Promoted = r.VintBytes()
		if err := r.Err(); err != nil {
			return fmt.Errorf("index slice record %d: %w", pt.Ordinal, err)
		}
		if pt.Position < 0 || pt.IndexPos < -1 {
			return fmt.Errorf("index slice record %d: position %d, index position %d", pt.Ordinal, pt.Position, pt.IndexPos)
		}
		if len(pt.Promoted) == 0 {
			pt.Promoted = nil
		}
		pt.Token = p.Token(pt.Key)
		if err := fn(&pt); err != nil {
			return err
		}
		pt.Ordinal++
	}
	return nil
}

// RebuildPartial writes every component of a received child but Data.db, which must already
// be complete in inst under desc: spec carries the parent's metadata (ParentRows is the shipped
// rows slice), shift and hi come from the sender's Run, index is the shipped index slice. It
// checks the records' order and that their positions fall inside the run.
func RebuildPartial(spec *Spec, inst *fsx.Install, desc descriptor.Descriptor, shift, hi int64, index []byte, data DataResult) ([]descriptor.Component, error) {
	b, err := NewBuilder(spec, inst, desc, shift, hi, 0)
	if err != nil {
		return nil, err
	}
	var prev token.Token
	var prevKey []byte
	prevPos := int64(-1)
	err = ForEachIndexRecord(index, spec.Partitioner, func(p *sstable.Partition) error {
		if p.Position >= hi || p.Position <= prevPos {
			return fmt.Errorf("index slice record %d: position %d outside the run or out of order", p.Ordinal, p.Position)
		}
		if prevPos >= 0 && token.CompareKeys(prev, prevKey, p.Token, p.Key) >= 0 {
			return fmt.Errorf("index slice record %d: key %x out of order", p.Ordinal, p.Key)
		}
		prevKey = append(prevKey[:0], p.Key...)
		prev = p.Token
		if prev.Bytes != nil {
			prev.Bytes = prevKey
		}
		prevPos = p.Position
		return b.Add(p)
	})
	if err != nil {
		return nil, err
	}
	return b.Finish(data)
}

// SpecFromStatistics is the Spec of a parent known only by its version, its Statistics.db
// bytes and (BTI) the shipped rows slice: what a streaming receiver has.
func SpecFromStatistics(v version.Version, statistics, rows []byte) (*Spec, error) {
	st, err := stats.Parse(statistics, v)
	if err != nil {
		return nil, fmt.Errorf("parent Statistics.db: %w", err)
	}
	if st.Validation == nil || st.Header == nil {
		return nil, fmt.Errorf("parent Statistics.db lacks its validation or header component")
	}
	p, err := token.ForName(st.Validation.Partitioner)
	if err != nil {
		return nil, err
	}
	if v.Format == version.BTI && rows == nil {
		rows = []byte{}
	}
	return &Spec{Version: v, Partitioner: p, Statistics: st, MinIndexInterval: bigindex.DefaultMinIndexInterval, ParentRows: rows}, nil
}
