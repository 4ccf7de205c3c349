package slice

import (
	"bytes"
	"context"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"strconv"
	"testing"

	"github.com/sluicedb/sluice/internal/lib/fsx"
	"github.com/sluicedb/sluice/internal/testkit/fixtures"
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
			for _, form := range []IndexFormat{IndexRecords, IndexBig, IndexPositions} {
				for _, one := range []bool{false, true} {
					if form == IndexBig && vn == "da" {
						continue // Index.db spans are BIG's
					}
					if form == IndexPositions && (vn != "da" || comp == "none") {
						continue // keys read from a compressed BTI child's Data.db
					}
					t.Run(fmt.Sprintf("%s/%s/%s/one=%v", vn, comp, form, one), func(t *testing.T) {
						v, _ := version.ParseWritable(vn)
						res, err := gen.Generate(context.Background(), t.TempDir(), gen.Options{Version: v, Partitions: 200,
							PartitionSize: 4 << 10, RowSize: 512, IndexBlockSize: 1 << 10, Compression: comp, ChunkLength: 4 << 10, Seed: 17})
						if err != nil {
							t.Fatal(err)
						}
						parent := openTable(t, res.Desc.Prefix())
						ranges, err := token.ParseRanges(token.Murmur3, "(-6000000000000000000,-1000000000000000000],(2000000000000000000,-8000000000000000000]")
						if err != nil {
							t.Fatal(err)
						}
						partials, reason, err := Partials(parent, ranges, PartialOptions{OnePerParent: one, Format: form})
						if err != nil {
							t.Fatal(err)
						}
						if one && len(partials) != 1 {
							t.Fatalf("one child per parent: got %d (%s)", len(partials), reason)
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
							if pt.IndexFormat != form {
								t.Fatalf("child %d: %s index slice, asked for %s", i, pt.IndexFormat, form)
							}
							d := receive(t, parent, pt, statsBytes, ranges, recv, i+1)
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
	}
}

// receive plays the receiver of ranges: it writes the shipped run as Data.db (checksumming as
// it goes) and rebuilds the rest from the index slice (held, or made by IndexReader as a sender
// does).
func receive(t *testing.T, parent *sstable.Table, pt Partial, statsBytes []byte, ranges token.RangeSet, dir string, gen int) descriptor.Descriptor {
	t.Helper()
	pt.Index = indexSlice(t, parent, pt)
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
	// What the wire carries of the layout: chunks, offsets and lengths of each segment.
	shipped := make([]Segment, len(pt.Layout.Segments))
	var readers []io.Reader
	for i, s := range pt.Layout.Segments {
		shipped[i] = Segment{FirstChunk: s.FirstChunk, LastChunk: s.LastChunk, PLo: s.PLo, DstOff: s.DstOff, SrcEnd: s.Length()}
		readers = append(readers, io.NewSectionReader(parent.DataFile(), s.SrcOff, s.Length()))
	}
	lay, err := ReceivedLayout(pt.Info != nil, pt.Layout.ChunkLength, pt.Layout.DataLength, shipped)
	if err != nil {
		t.Fatal(err)
	}
	src := io.MultiReader(readers...)
	var data DataResult
	// A positions slice's keys are read from Data.db as it arrives: Data.db is then written
	// in twentieths, one more with each piece of the slice, so that records wait for their
	// keys (and the last ones for Finish), and a key read before its bytes arrive would fail
	// its chunk's check.
	var arriving []byte
	if pt.Info != nil {
		h := crc32.NewIEEE()
		dst, buf := io.Writer(f), &bytes.Buffer{}
		if pt.IndexFormat == IndexPositions {
			dst = buf
		}
		if _, err := io.Copy(io.MultiWriter(dst, h), src); err != nil {
			t.Fatal(err)
		}
		if pt.IndexFormat == IndexPositions {
			arriving = buf.Bytes()
		}
		data = DataResult{Compression: pt.Info, Digest: h.Sum32()}
	} else {
		cw := compress.NewCRCWriter(65536)
		if _, err := io.Copy(io.MultiWriter(f, cw), src); err != nil {
			t.Fatal(err)
		}
		data.CRC, data.Digest = cw.Result()
	}
	// The digest a sender derives from the parent's checksums is the CRC32 of what arrived.
	if want, err := LayoutDigest(parent, &pt.Layout); err != nil || want != data.Digest {
		t.Errorf("LayoutDigest %08x (%v), the received Data.db's CRC32 %08x", want, err, data.Digest)
	}
	data.DataLength, data.FileLength, data.HasDigest = lay.DataLength, lay.FileLength, true
	// The index slice as a receiver gets it: in pieces cut anywhere (1, 7, 300 and 5000
	// bytes in turn, so records straddle every kind of boundary, and a record cut short is
	// completed from a piece both shorter and longer than what it needs), each record rebuilt
	// once its end has arrived.
	r, err := NewPartialRebuild(spec, inst, d, lay, RebuildOptions{Partitions: pt.Plan.Partitions, Format: pt.IndexFormat, Ranges: ranges,
		Data: f, Compression: pt.Info})
	if err != nil {
		t.Fatal(err)
	}
	var written int64
	arrive := func(n int64) {
		if arriving == nil {
			return
		}
		if _, err := f.WriteAt(arriving[written:n], written); err != nil {
			t.Fatal(err)
		}
		written = n
		if err := r.Arrived(n); err != nil {
			t.Fatal(fmt.Errorf("rebuild: %w", err))
		}
	}
	arrive(0)
	cuts := []int{1, 7, 300, 5000}
	for i, b := 0, pt.Index; len(b) > 0; i++ {
		k := min(len(b), cuts[i%len(cuts)])
		if err := r.Write(b[:k]); err != nil {
			t.Fatal(fmt.Errorf("rebuild: %w", err))
		}
		arrive(min(lay.FileLength, int64(i+1)*lay.FileLength/20))
		b = b[k:]
	}
	arrive(lay.FileLength)
	if r.Records() != pt.Plan.Partitions {
		t.Fatalf("%d records rebuilt, %d planned", r.Records(), pt.Plan.Partitions)
	}
	if _, err := r.Finish(data); err != nil {
		t.Fatal(fmt.Errorf("rebuild: %w", err))
	}
	if err := inst.Commit(); err != nil {
		t.Fatal(err)
	}
	return d
}

// Every fixture through the transfer material of one multi-run child per parent (what a
// streaming sender ships for three ranges, one wrapping): the rebuilt sstable verifies
// (extended) and holds exactly the parent's partitions in the ranges.
func TestPartialTransferEveryFixture(t *testing.T) {
	for _, f := range fixtures.All(t) {
		ranges, ok := fixtureRanges(t, f)
		if !ok {
			continue
		}
		t.Run(f.Name, func(t *testing.T) {
			parent := openTable(t, f.Prefix)
			forms := []IndexFormat{IndexRecords}
			if parent.Version().Format == version.Big {
				forms = append(forms, IndexBig)
			} else if parent.Compression != nil {
				forms = append(forms, IndexPositions)
			}
			for _, form := range forms {
				partials, reason, err := Partials(parent, ranges, PartialOptions{OnePerParent: true, Bounds: Bounds{MaxDeadRatio: -1}, Format: form})
				if err != nil || len(partials) != 1 {
					t.Fatalf("%s: %d partials (%s): %v", form, len(partials), reason, err)
				}
				statsBytes, err := os.ReadFile(parent.Path(descriptor.Statistics))
				if err != nil {
					t.Fatal(err)
				}
				d := receive(t, parent, partials[0], statsBytes, ranges, t.TempDir(), 1)
				rep, err := sstable.Verify(d.Prefix(), sstable.VerifyOptions{Extended: true})
				if err != nil {
					t.Fatal(err)
				}
				for _, p := range rep.Problems {
					t.Errorf("received: %s", p)
				}
				want := map[string][]byte{}
				for _, p := range readAll(t, f.Prefix) {
					if ranges.Contains(p.Token) {
						want[string(p.Key)] = p.Bytes
					}
				}
				got := readAll(t, d.Prefix())
				for _, p := range got {
					if w, ok := want[string(p.Key)]; !ok || string(w) != string(p.Bytes) {
						t.Errorf("partition %x is not the parent's in the ranges", p.Key)
					}
				}
				if len(got) != len(want) {
					t.Errorf("%s: %d partitions, want %d", form, len(got), len(want))
				}
			}
		})
	}
}

// indexSlice is pt's index slice, made by IndexReader as a sender does when pt holds none.
func indexSlice(t *testing.T, parent *sstable.Table, pt Partial) []byte {
	t.Helper()
	if pt.Index != nil {
		return pt.Index
	}
	r, err := IndexReader(parent, pt)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
