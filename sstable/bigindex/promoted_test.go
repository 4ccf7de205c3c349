package bigindex

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/sluicedb/sluice/sstable/encoding"
	"github.com/sluicedb/sluice/sstable/version"
)

// The legacy *_clust tables have 13 IndexInfo blocks per partition in every version; only the
// DeletionTime encoding (and so headerLength) differs between legacy and oa.
func TestCheckPromotedOnClusteredFixtures(t *testing.T) {
	checked := 0
	for _, s := range bigFixtures(t) {
		v := fixtureVersion(t, s)
		wantHeader := uint64(15)
		if v.HasUIntDeletionTime() {
			wantHeader = 4
		}
		it := NewIterator(s.Read(t, "Index.db"))
		for it.Next() {
			e := it.Entry()
			h, err := CheckPromoted(e.Promoted, v)
			if err != nil {
				t.Fatalf("%s entry at %d: %v", s.Name, e.Offset, err)
			}
			if len(e.Promoted) == 0 {
				if h != (PromotedHeader{}) {
					t.Fatalf("%s: empty promoted index gave %+v", s.Name, h)
				}
				continue
			}
			if !strings.Contains(s.Name, "_clust") {
				t.Fatalf("%s: unexpected promoted index", s.Name)
			}
			if h.BlockCount != 13 || h.HeaderLength != wantHeader || !h.Deletion.IsLive() {
				t.Fatalf("%s entry at %d: %+v; want 13 blocks, header length %d, LIVE", s.Name, e.Offset, h, wantHeader)
			}
			if h.OffsetsStart != len(e.Promoted)-4*13 || h.BlockOffset(e.Promoted, 0) != h.IndexInfoStart {
				t.Fatalf("%s: offsets table misplaced: %+v", s.Name, h)
			}
			checked++
		}
		if it.Err() != nil {
			t.Fatal(it.Err())
		}
	}
	// clust and clust_counter in md, me, nb, oa, plus the md/me *_compact variants: 12 x 5.
	if checked != 60 {
		t.Fatalf("checked %d promoted indexes, want 60", checked)
	}
}

func TestDeletionTimeEncodings(t *testing.T) {
	legacy, _ := version.Parse(version.Big, "nb")
	oa, _ := version.Parse(version.Big, "oa")
	deleted := DeletionTime{MarkedForDeleteAt: 1_700_000_000_000_000, LocalDeletionTime: 1_700_000_000}
	cases := []struct {
		v    version.Version
		d    DeletionTime
		want string
	}{
		{legacy, Live, "7fffffff8000000000000000"},
		{oa, Live, "80"},
		{legacy, deleted, "6553f10000060a24181e4000"},
		{oa, deleted, "00060a24181e40006553f100"},
	}
	for _, c := range cases {
		b := AppendDeletionTime(nil, c.d, c.v)
		if got := hex.EncodeToString(b); got != c.want {
			t.Errorf("%s %+v = %s, want %s", c.v, c.d, got, c.want)
		}
		r := encoding.NewReader(b)
		if got := ReadDeletionTime(r, c.v); got != c.d || r.Len() != 0 || r.Err() != nil {
			t.Errorf("%s: read back %+v (rest %d, err %v)", c.v, got, r.Len(), r.Err())
		}
	}
	// oa: a first byte with the sign bit set must be exactly 0x80, as Cassandra insists.
	r := encoding.NewReader([]byte{0x81, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	ReadDeletionTime(r, oa)
	if !errors.Is(r.Err(), ErrMalformed) {
		t.Fatalf("flags 0x81: got %v, want malformed", r.Err())
	}
}

// promoted builds a promoted index with the given DeletionTime bytes, block sizes and offsets.
func promoted(deletion []byte, blockSizes []int, offsets []int32) []byte {
	b := encoding.AppendUVint(nil, 4)
	b = append(b, deletion...)
	b = encoding.AppendUVint(b, uint64(len(offsets)))
	for _, n := range blockSizes {
		b = append(b, make([]byte, n)...)
	}
	for _, o := range offsets {
		b = binary.BigEndian.AppendUint32(b, uint32(o))
	}
	return b
}

func TestCheckPromotedRejectsBrokenStructure(t *testing.T) {
	oa, _ := version.Parse(version.Big, "oa")
	live := []byte{0x80}
	valid := promoted(live, []int{5, 7}, []int32{0, 5})
	if h, err := CheckPromoted(valid, oa); err != nil || h.BlockCount != 2 || h.BlockOffset(valid, 1) != h.IndexInfoStart+5 {
		t.Fatalf("valid: %+v %v", h, err)
	}
	cases := []struct {
		name string
		b    []byte
		is   error
		says string
	}{
		{"truncated header length", []byte{0xc0, 1}, ErrTruncated, "vint"},
		{"bad deletion flags", promoted([]byte{0xff}, []int{5, 7}, []int32{0, 5}), ErrMalformed, "flags"},
		{"truncated deletion", []byte{4, 0x00, 1, 2}, ErrTruncated, ""},
		{"no blocks", promoted(live, nil, nil), ErrMalformed, "no blocks"},
		{"block count past the end", append(encoding.AppendUVint(nil, 4), 0x80, 100, 0, 0, 0, 0), ErrTruncated, "block count"},
		{"first offset not zero", promoted(live, []int{5, 7}, []int32{1, 5}), ErrMalformed, "want 0"},
		{"offsets decrease", promoted(live, []int{9, 9, 9}, []int32{0, 9, 4}), ErrMalformed, "increasing"},
		{"block shorter than an IndexInfo", promoted(live, []int{3, 9}, []int32{0, 3}), ErrMalformed, "increasing"},
		{"offset past the IndexInfo run", promoted(live, []int{5, 5}, []int32{0, 8}), ErrMalformed, "leaves less"},
		{"negative offset", promoted(live, []int{5, 5}, []int32{0, -8}), ErrMalformed, "increasing"},
	}
	for _, c := range cases {
		_, err := CheckPromoted(c.b, oa)
		var oe *encoding.OffsetError
		if !errors.Is(err, c.is) || !errors.As(err, &oe) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: got %v, want %v saying %q", c.name, err, c.is, c.says)
		}
	}
}
