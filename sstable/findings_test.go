package sstable

import (
	"bytes"
	"encoding/binary"
	"os"
	"strings"
	"testing"
)

// flipEveryByte flips every step-th byte of one component of a fixture copy in turn (bit i%8 of byte
// i) and returns, per flipped offset, the extended verify's report.
func flipEveryByte(t *testing.T, fixture, comp string, step int, fn func(off int, rep *Report), only ...func(int) bool) {
	t.Helper()
	f := pick(t, []string{fixture})[0]
	prefix := copyFixture(t, f)
	path := prefix + "-" + comp
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for off := 0; off < len(orig); off += step {
		if len(only) > 0 && !only[0](off) {
			continue
		}
		b := append([]byte(nil), orig...)
		b[off] ^= 1 << (off % 8)
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		rep, err := Verify(prefix, VerifyOptions{Extended: true})
		if err != nil {
			t.Fatal(err)
		}
		fn(off, rep)
	}
	if err := os.WriteFile(path, orig, 0o644); err != nil {
		t.Fatal(err)
	}
}

// Finding 2 of issue 10: Rows.db is derived from Data.db, so an extended verify rebuilds each
// row index entry from the rows and compares. A bit flip at every other byte of a Cassandra-written
// Rows.db (bit i%8 of byte i) is caught and blamed on Rows.db.
func TestVerifyCatchesEveryRowsDBFlip(t *testing.T) {
	flipEveryByte(t, "apache-legacy/da/legacy_tables/legacy_da_clust/da-1-bti", "Rows.db", 2, func(off int, rep *Report) {
		if rep.OK {
			t.Errorf("Rows.db bit flip at %d passes verify", off)
			return
		}
		if !named(rep, "Rows.db") {
			t.Errorf("Rows.db bit flip at %d blamed elsewhere: %v", off, rep.Problems)
		}
	})
}

func named(rep *Report, comp string) bool {
	for _, p := range rep.Problems {
		if strings.HasSuffix(p.File, comp) {
			return true
		}
	}
	return false
}

// Finding 3 of issue 10: md Statistics.db has no checksum; what can be recomputed is compared.
// The key cardinality estimator (the HyperLogLog) and the partition-size histogram are exact
// functions of the index, so every flip in them is caught and blamed on Statistics.db. Row
// bounds (timestamps, deletion times, TTLs, clustering values) are checked to cover the rows:
// a zero-copy child keeps its parent's wider bounds, so only a narrowed bound is damage.
func TestVerifyCatchesMdStatisticsFlips(t *testing.T) {
	const name = "apache-legacy/md/legacy_tables/legacy_md_clust/md-1-big"
	f := pick(t, []string{name})[0]
	tb, err := Open(f.Prefix)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(f.Prefix + "-Statistics.db")
	tb.Close()
	card := bytes.Index(raw, tb.Statistics.Compaction.Cardinality)
	// STATS starts with the partition-size histogram: i32 bucket count, then (offset, count)
	// i64 pairs. Its offset is in the table of contents (i32 count, then i32 type, i32 offset).
	hist := -1
	for i := 0; i < int(binary.BigEndian.Uint32(raw)); i++ {
		if binary.BigEndian.Uint32(raw[4+8*i:]) == 2 {
			hist = int(binary.BigEndian.Uint32(raw[8+8*i:]))
		}
	}
	histEnd := hist + 4 + 16*len(tb.Statistics.Stats.EstimatedPartitionSize.Counts)
	if card < 0 || hist < 0 {
		t.Fatal("cannot locate the estimator or the histogram")
	}
	exact := func(off int) bool {
		return (off >= card && off < card+len(tb.Statistics.Compaction.Cardinality)) || (off >= hist && off < histEnd)
	}
	checked := 0
	flipEveryByte(t, name, "Statistics.db", 5, func(off int, rep *Report) {
		if !exact(off) {
			return
		}
		checked++
		switch {
		case rep.OK:
			t.Errorf("Statistics.db flip at %d (recomputable) passes verify", off)
		case !named(rep, "Statistics.db"):
			t.Errorf("Statistics.db flip at %d blamed elsewhere: %v", off, rep.Problems)
		}
	}, exact)
	if checked < 450 {
		t.Errorf("only %d flips checked", checked)
	}
}

// Finding 4 of issue 10: one damaged chunk is one problem line; the pass continues past it
// and checks every other chunk and partition (none of them reported).
func TestVerifyReportsABadChunkOnce(t *testing.T) {
	const name = "sstable-transformer/oa/spark_test.testtable_10k/oa-13-big"
	size := fileSize(t, pick(t, []string{name})[0].Prefix+"-Data.db")
	flipEveryByte(t, name, "Data.db", int(size/40), func(off int, rep *Report) {
		if len(rep.Problems) != 1 || !strings.Contains(rep.Problems[0].Message, "checksum") || rep.Problems[0].Offset < 0 {
			t.Errorf("Data.db flip at %d: %d problems %v, want the one chunk checksum mismatch with its offset", off, len(rep.Problems), rep.Problems)
		}
		if rep.Partitions != 10000 {
			t.Errorf("Data.db flip at %d: %d partitions checked, want all 10000", off, rep.Partitions)
		}
	})
}

// Finding 5 of issue 10: a flipped CompressionInfo.db chunk offset is blamed on
// CompressionInfo.db, with the offset of the damaged entry, not on Data.db.
func TestVerifyBlamesCompressionInfoOffsets(t *testing.T) {
	const name = "sstable-transformer/oa/spark_test.testtable_10k/oa-13-big"
	f := pick(t, []string{name})[0]
	size := int(fileSize(t, f.Prefix+"-CompressionInfo.db"))
	tb, err := Open(f.Prefix)
	if err != nil {
		t.Fatal(err)
	}
	chunks := len(tb.Compression.Offsets)
	tb.Close()
	start := size - 8*chunks // the i64 offsets end the file
	flipEveryByte(t, name, "CompressionInfo.db", 1, func(off int, rep *Report) {
		if rep.OK {
			t.Errorf("CompressionInfo.db flip at %d passes", off)
			return
		}
		entry := int64(start + (off-start)/8*8)
		for _, p := range rep.Problems {
			if !strings.HasSuffix(p.File, "CompressionInfo.db") || p.Offset < entry-8 || p.Offset > entry+16 {
				t.Errorf("CompressionInfo.db flip at %d (entry at %d): problem %v", off, entry, p)
			}
		}
	}, func(off int) bool { return off >= start && (off-start)%8 >= 4 }) // the low half: plausible offsets
}
