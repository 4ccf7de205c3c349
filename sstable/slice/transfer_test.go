package slice

import (
	"context"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"strconv"
	"testing"

	"github.com/sluicedb/sluice/internal/fsx"
	"github.com/sluicedb/sluice/sstable"
	"github.com/sluicedb/sluice/sstable/compress"
	"github.com/sluicedb/sluice/sstable/descriptor"
	"github.com/sluicedb/sluice/sstable/gen"
	"github.com/sluicedb/sluice/sstable/token"
	"github.com/sluicedb/sluice/sstable/version"
)

// A transfer without a network: the sender's Partials, the bytes a receiver would get, and the
// receiver's RebuildPartial from nothing but the shipped material (no access to the parent).
// The children verify and hold exactly the parent's partitions in the ranges.
func TestPartialTransferRebuildsFromShippedMaterial(t *testing.T) {
	for _, vn := range []string{"nb", "oa", "da"} {
		for _, comp := range []string{"lz4", "none"} {
			t.Run(vn+"/"+comp, func(t *testing.T) {
				v, _ := version.ParseWritable(vn)
				res, err := gen.Generate(context.Background(), t.TempDir(), gen.Options{Version: v, Partitions: 200,
					PartitionSize: 4 << 10, RowSize: 512, IndexBlockSize: 1 << 10, Compression: comp, ChunkLength: 4 << 10, Seed: 17})
				if err != nil {
					t.Fatal(err)
				}
				parent, err := sstable.Open(res.Desc.Prefix())
				if err != nil {
					t.Fatal(err)
				}
				defer parent.Close()
				ranges, err := token.ParseRanges(token.Murmur3, "(-6000000000000000000,-1000000000000000000],(2000000000000000000,-8000000000000000000]")
				if err != nil {
					t.Fatal(err)
				}
				partials, err := Partials(parent, ranges)
				if err != nil {
					t.Fatal(err)
				}
				statsBytes, err := os.ReadFile(parent.Path(descriptor.Statistics))
				if err != nil {
					t.Fatal(err)
				}
				recv := t.TempDir()
				want := map[string][]byte{}
				for _, p := range readAll(t, res.Desc.Prefix()) {
					if ranges.Contains(p.Token) {
						want[string(p.Key)] = p.Bytes
					}
				}
				got := 0
				for i, pt := range partials {
					d := receive(t, parent, pt, statsBytes, recv, i+1)
					rep, err := sstable.Verify(d.Prefix(), sstable.VerifyOptions{Extended: true})
					if err != nil {
						t.Fatal(err)
					}
					for _, p := range rep.Problems {
						t.Errorf("received child %d: %s", i, p)
					}
					for _, p := range readAll(t, d.Prefix()) {
						if w, ok := want[string(p.Key)]; !ok || string(w) != string(p.Bytes) {
							t.Errorf("received child %d: partition %x is not the parent's", i, p.Key)
						}
						got++
					}
				}
				if got != len(want) {
					t.Errorf("received %d partitions, want %d", got, len(want))
				}
			})
		}
	}
}

// receive plays the receiver: it writes the shipped run as Data.db (checksumming as it goes)
// and rebuilds the rest.
func receive(t *testing.T, parent *sstable.Table, pt Partial, statsBytes []byte, dir string, gen int) descriptor.Descriptor {
	t.Helper()
	spec, err := SpecFromStatistics(parent.Version(), statsBytes, pt.Rows)
	if err != nil {
		t.Fatal(err)
	}
	d := descriptor.Descriptor{Dir: dir, Version: parent.Version(), ID: strconv.Itoa(gen)}
	inst, err := fsx.NewInstall(dir, d.Filename(descriptor.TOC))
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Abort()
	f, err := inst.Create(d.Filename(descriptor.Data))
	if err != nil {
		t.Fatal(err)
	}
	src := io.NewSectionReader(parent.DataFile(), pt.Run.SrcOff, pt.Run.SrcEnd-pt.Run.SrcOff)
	var data DataResult
	if pt.Info != nil {
		h := crc32.NewIEEE()
		if _, err := io.Copy(io.MultiWriter(f, h), src); err != nil {
			t.Fatal(err)
		}
		data = DataResult{Compression: pt.Info, Digest: h.Sum32()}
	} else {
		cw := compress.NewCRCWriter(65536)
		if _, err := io.Copy(io.MultiWriter(f, cw), src); err != nil {
			t.Fatal(err)
		}
		data.CRC, data.Digest = cw.Result()
	}
	data.DataLength, data.FileLength, data.HasDigest = pt.Run.DataLength, pt.Run.FileLength(), true
	if _, err := RebuildPartial(spec, inst, d, pt.Run.Shift, pt.Run.Hi, pt.Index, data); err != nil {
		t.Fatal(fmt.Errorf("rebuild: %w", err))
	}
	if err := inst.Commit(); err != nil {
		t.Fatal(err)
	}
	return d
}
