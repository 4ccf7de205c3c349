package slice

import (
	"context"
	"fmt"
	"math"

	"github.com/sluicedb/sluice/sstable"
	"github.com/sluicedb/sluice/sstable/rows"
	"github.com/sluicedb/sluice/sstable/schema"
)

// rawThreshold is the parent's maxCompressedLength where it is meaningful (0 otherwise), so a
// rewrite keeps the parent's raw-chunk rule exactly.
func rawThreshold(t *sstable.Table) int32 {
	if t.Compression == nil || !t.Version().HasMaxCompressedLength() {
		return 0
	}
	if m := t.Compression.MaxCompressedLength; m != math.MaxInt32 {
		return m
	}
	return 0
}

// rewrite is the row-by-row path: every partition of every child is decoded with the row
// cursor and written again by the sstable Writer, which recomputes every component. It is the
// baseline the zero-copy modes are measured against, and the fallback for parents they refuse.
func rewrite(ctx context.Context, parent *sstable.Table, plans []ChildPlan, dir string, res *Result) error {
	if err := provenRange(parent, plans[0].Lo, plans[len(plans)-1].Hi); err != nil {
		return err
	}
	table, err := schema.Compile(parent.Statistics.Header)
	if err != nil {
		return fmt.Errorf("rewrite %s: %w", parent.Desc, err)
	}
	opts := sstable.WriterOptions{
		Version: parent.Version(), Partitioner: parent.Partitioner, Header: parent.Statistics.Header,
		BloomFPChance: parent.Statistics.Validation.BloomFilterFPChance,
	}
	if c := parent.Compression; c != nil {
		opts.Compressor, opts.CompressorOptions, opts.ChunkLength = c.Compressor, c.Options, c.ChunkLength
		opts.MaxCompressedLength = rawThreshold(parent)
	}
	if opts.BloomFPChance == 0 {
		opts.BloomFPChance = sstable.DefaultBloomFPChance
	}
	var (
		k       int // the plan being written
		run     int // the run of plan k the scan is in or before
		w       *sstable.Writer
		cur     rows.Cursor
		buf     []byte
		pending struct {
			valid bool
			pos   int64
		}
	)
	// copyPartition writes the parent partition at [pending.pos, end) to w.
	copyPartition := func(end int64) error {
		buf = append(buf[:0], make([]byte, end-pending.pos)...)
		if _, err := parent.Data.ReadAt(buf, pending.pos); err != nil {
			return err
		}
		if err := cur.ResetTrailing(table, parent.Version(), buf); err != nil {
			return err
		}
		if err := w.BeginPartition(cur.Key(), cur.Deletion()); err != nil {
			return err
		}
		if st := cur.Static(); st != nil {
			if err := w.AppendStatic(st); err != nil {
				return err
			}
		}
		for cur.Next() {
			var err error
			if cur.Kind() == rows.KindRow {
				err = w.AppendRow(cur.Row())
			} else {
				err = w.AppendMarker(cur.Marker())
			}
			if err != nil {
				return err
			}
		}
		if err := cur.Err(); err != nil {
			return err
		}
		return w.EndPartition()
	}
	finish := func() error {
		if pending.valid {
			if err := copyPartition(plans[k].Hi); err != nil {
				return err
			}
			pending.valid = false
		}
		d, err := w.Finish()
		w = nil
		if err != nil {
			return err
		}
		p := plans[k]
		res.Children = append(res.Children, Child{Desc: d, Digest: true, Range: p.Range, Partitions: p.Partitions, Runs: len(p.Runs),
			FirstToken: p.FirstTok, LastToken: p.LastTok, DataFileLength: fileSize(d.Path("Data.db")), Copied: fileSize(d.Path("Data.db"))})
		k++
		return nil
	}
	err = parent.ScanPartitions(func(p *sstable.Partition) error {
		if p.Ordinal%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if w != nil && pending.valid {
			if err := copyPartition(p.Position); err != nil {
				return err
			}
			pending.valid = false
		}
		if w != nil && p.Ordinal > plans[k].LastOrdinal() {
			if err := finish(); err != nil {
				return err
			}
		}
		if w == nil && k < len(plans) && p.Ordinal == plans[k].FirstOrdinal {
			var err error
			if w, err = sstable.NewWriter(dir, opts); err != nil {
				return err
			}
			run = 0
		}
		if w != nil {
			var in bool
			if run, in = plans[k].Contains(run, p.Ordinal); in {
				pending.valid, pending.pos = true, p.Position
			}
		}
		return nil
	})
	if err == nil && w != nil {
		err = finish()
	}
	if err != nil && w != nil {
		w.Abort()
	}
	return err
}
