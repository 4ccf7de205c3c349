package rows

import (
	"slices"
	"testing"
)

// The writer reports what each call contributes to sstable metadata, as MetadataCollector
// would see it.
func TestWriterFacts(t *testing.T) {
	tb := compile(t, richHeader())
	w := NewWriter(tb, vOA)
	p := richPartitions()[0]
	buf, err := w.BeginPartition(nil, p.key, p.deletion)
	if err != nil {
		t.Fatal(err)
	}
	f := w.Facts()
	if f.MinTimestamp != ts0-5 || f.MaxTimestamp != ts0-5 || !slices.Equal(f.DropTimes, []int64{1_650_000_000}) || f.Size != int64(len(buf)) {
		t.Errorf("partition header facts %+v", f)
	}
	n := len(buf)
	if buf, err = w.AppendStatic(buf, p.static); err != nil {
		t.Fatal(err)
	}
	if f.Rows != 0 || f.Cells != 3 || f.Columns != 2 || f.Size != int64(len(buf)-n) {
		t.Errorf("static facts %+v", f)
	}
	if buf, err = w.AppendMarker(buf, p.items[0].(*Marker)); err != nil {
		t.Fatal(err)
	}
	if f.Cells != 0 || f.MinTimestamp != ts0+3 || !slices.Equal(f.DropTimes, []int64{1_650_000_002}) {
		t.Errorf("marker facts %+v", f)
	}
	n = len(buf)
	if buf, err = w.AppendRow(buf, p.items[1].(*Row)); err != nil {
		t.Fatal(err)
	}
	want := Facts{
		MinTimestamp: ts0 + 10, MaxTimestamp: ts0 + 13,
		MinLocalDeletionTime: 1_650_000_003, MaxLocalDeletionTime: NoDeletionTime,
		MinTTL: 0, MaxTTL: 3600,
		DropTimes: []int64{1_700_000_000, 1_700_000_000, 1_650_000_120, 1_650_000_003},
		Rows:      1, Cells: 7, Columns: 6, Size: int64(len(buf) - n),
	}
	if f.MinTimestamp != want.MinTimestamp || f.MaxTimestamp != want.MaxTimestamp ||
		f.MinLocalDeletionTime != want.MinLocalDeletionTime || f.MaxLocalDeletionTime != want.MaxLocalDeletionTime ||
		f.MinTTL != want.MinTTL || f.MaxTTL != want.MaxTTL || !slices.Equal(f.DropTimes, want.DropTimes) ||
		f.Rows != want.Rows || f.Cells != want.Cells || f.Columns != want.Columns || f.Size != want.Size {
		t.Errorf("row facts\n got %+v\nwant %+v", *f, want)
	}
	if buf, err = w.EndPartition(buf); err != nil || f.Size != 1 || f.Cells != 0 || w.PartitionSize() != int64(len(buf)) {
		t.Errorf("end facts %+v %v", f, err)
	}
}

// Writing a generator's row and walking a partition allocate nothing in steady state.
func TestNoAllocations(t *testing.T) {
	tb := compile(t, stressHeader())
	w := NewWriter(tb, vOA)
	buf := make([]byte, 0, 1<<16)
	var s SimpleRow
	value := make([]byte, 100)
	ck := []byte("ck")
	buf, _ = w.BeginPartition(buf, []byte("pk"), Live)
	if a := testing.AllocsPerRun(100, func() {
		var err error
		if buf, err = w.AppendRow(buf[:0], s.Set(ck, 0, 1_700_000_000_000_001, value)); err != nil {
			t.Fatal(err)
		}
	}); a != 0 {
		t.Errorf("AppendRow: %v allocations", a)
	}
	part := generatedPartition(t, tb, 16, 4096)
	var c Cursor
	if a := testing.AllocsPerRun(100, func() {
		if err := walk(&c, tb, vOA, part); err != nil {
			t.Fatal(err)
		}
	}); a != 0 {
		t.Errorf("Cursor: %v allocations", a)
	}
}
