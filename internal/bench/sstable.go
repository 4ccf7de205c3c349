package bench

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"

	"github.com/sluicedb/sluice/sstable"
	"github.com/sluicedb/sluice/sstable/compress"
	"github.com/sluicedb/sluice/sstable/gen"
	"github.com/sluicedb/sluice/sstable/version"
)

// SSTableOptions configures the format-layer benchmark.
type SSTableOptions struct {
	Dir          string // where the sstables are generated (removed afterwards unless Keep)
	Size         int64  // uncompressed size of the main sstable
	IndexEntries int64  // partitions of the index-pass sstable
	Keep         bool
}

// SSTableRow is one line of the format-layer table.
type SSTableRow struct {
	Name      string  `json:"name"`
	Bytes     int64   `json:"bytes"`
	Seconds   float64 `json:"wall_seconds"`
	CPU       float64 `json:"cpu_seconds"`
	Rate      float64 `json:"rate"`
	Unit      string  `json:"unit"`
	Reference string  `json:"reference,omitempty"`
	Ratio     float64 `json:"ratio,omitempty"`
	Target    string  `json:"target,omitempty"`
	PerItem   float64 `json:"allocs_per_item"`
}

// SSTable measures gen against single-core LZ4 compression of the same data, verify against
// single-core LZ4 decompression + CRC32 of the same chunks, and the Index.db pass in entries/s.
func SSTable(ctx context.Context, o SSTableOptions) ([]SSTableRow, error) {
	dir, err := os.MkdirTemp(o.Dir, "sluice-bench-sstable-")
	if err != nil {
		return nil, err
	}
	if !o.Keep {
		defer os.RemoveAll(dir)
	}
	v, _ := version.ParseWritable("oa")
	var res gen.Result
	genSample, err := Measure(func() error {
		var err error
		res, err = gen.Generate(ctx, filepath.Join(dir, "main"), gen.Options{Version: v, Size: o.Size, Seed: 1})
		return err
	})
	if err != nil {
		return nil, err
	}
	t, err := sstable.Open(res.Desc.Prefix())
	if err != nil {
		return nil, err
	}
	defer t.Close()
	dataLen := t.DataLength()

	// The same chunks, in memory, for the references.
	raw, err := os.ReadFile(res.Desc.Path("Data.db"))
	if err != nil {
		return nil, err
	}
	info := t.Compression
	codec, err := compress.CodecFor(info.Compressor, info.Options)
	if err != nil {
		return nil, err
	}
	records := make([][]byte, len(info.Offsets))
	for i := range info.Offsets {
		off, n := info.ChunkSpan(i, int64(len(raw)))
		records[i] = raw[off : off+n+4]
	}
	decompSample, err := Measure(func() error {
		out := make([]byte, 0, info.ChunkLength)
		for i, rec := range records {
			body := rec[:len(rec)-4]
			if crc32.ChecksumIEEE(body) != binary.BigEndian.Uint32(rec[len(body):]) {
				return fmt.Errorf("chunk %d: crc", i)
			}
			_, n := info.UncompressedSpan(i)
			var err error
			if out, err = codec.Decompress(out[:0], body, int(n)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	plain := make([][]byte, 0, len(records))
	if err := t.Data.ForEachChunk(func(_ int, b []byte) error {
		plain = append(plain, append([]byte(nil), b...))
		return nil
	}); err != nil {
		return nil, err
	}
	compSample, err := Measure(func() error {
		out := make([]byte, 0, codec.Bound(info.ChunkLength))
		for _, p := range plain {
			var err error
			if out, err = codec.Compress(out[:0], p); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	plain, raw, records = nil, nil, nil

	verifySample, err := Measure(func() error {
		rep, err := sstable.Verify(res.Desc.Prefix(), sstable.VerifyOptions{})
		if err == nil && !rep.OK {
			err = fmt.Errorf("verify failed: %v", rep.Problems[0])
		}
		return err
	})
	if err != nil {
		return nil, err
	}

	// Index pass over an sstable of many small partitions.
	ires, err := gen.Generate(ctx, filepath.Join(dir, "index"), gen.Options{Version: v, Partitions: o.IndexEntries,
		PartitionSize: 64, RowSize: 64, Seed: 2})
	if err != nil {
		return nil, err
	}
	it, err := sstable.Open(ires.Desc.Prefix())
	if err != nil {
		return nil, err
	}
	defer it.Close()
	var n int64
	_ = it.ScanPartitions(func(*sstable.Partition) error { n++; return nil }) // warm the page cache
	n = 0
	indexSample, err := Measure(func() error {
		var sink int64
		err := it.ScanPartitions(func(p *sstable.Partition) error {
			sink ^= p.Token.Long ^ p.Position
			n++
			return nil
		})
		_ = sink
		return err
	})
	if err != nil {
		return nil, err
	}

	rows := []SSTableRow{
		row("LZ4 compress, 1 core (reference)", dataLen, compSample, "MB/s", ""),
		row("sstable gen (oa, LZ4 16 KiB)", dataLen, genSample, "MB/s", ""),
		row("LZ4 decompress + CRC32, 1 core (reference)", dataLen, decompSample, "MB/s", ""),
		row("sstable verify", dataLen, verifySample, "MB/s", ""),
	}
	rows[1].Reference, rows[1].Ratio, rows[1].Target = rows[0].Name, rows[1].Rate/rows[0].Rate, ">= 0.70"
	rows[3].Reference, rows[3].Ratio, rows[3].Target = rows[2].Name, rows[3].Rate/rows[2].Rate, ">= 0.50"
	ir := SSTableRow{Name: "Index.db pass (key, position, token)", Bytes: n, Seconds: indexSample.Wall.Seconds(),
		CPU: indexSample.CPU.Seconds(), Rate: float64(n) / indexSample.Wall.Seconds() / 1e6, Unit: "M entries/s",
		Target: ">= 10", PerItem: float64(indexSample.Mallocs) / float64(max(n, 1))}
	return append(rows, ir), nil
}

func row(name string, bytes int64, s Sample, unit, target string) SSTableRow {
	return SSTableRow{Name: name, Bytes: bytes, Seconds: s.Wall.Seconds(), CPU: s.CPU.Seconds(),
		Rate: MBps(bytes, s.Wall), Unit: unit, Target: target, PerItem: float64(s.Mallocs) / float64(max(bytes>>14, 1))}
}
