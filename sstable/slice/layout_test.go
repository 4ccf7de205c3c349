package slice

import (
	"math/rand/v2"
	"testing"
)

// Mapping from the previous partition's segment gives Map's answer whatever the hint: the
// segment itself when the position is in it, a search otherwise, and the same error for a
// position between or past the segments.
func TestMapFromAnySegmentIsMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	for _, compressed := range []bool{false, true} {
		var segs []Segment
		for i, p := 0, int64(0); i < 12; i++ {
			chunks := 1 + rng.IntN(5)
			first := int(p/4096) + 1 + rng.IntN(3)
			segs = append(segs, Segment{FirstChunk: first, LastChunk: first + chunks - 1})
			p = int64(first+chunks) * 4096
		}
		var dst int64
		for i := range segs {
			s := &segs[i]
			s.PLo, s.PHi, s.DstOff = int64(s.FirstChunk)*4096, int64(s.LastChunk+1)*4096, dst
			s.SrcOff, s.SrcEnd = s.PLo, s.PHi
			dst += s.PHi - s.PLo
		}
		lay, err := ReceivedLayout(compressed, 4096, dst-100, segs)
		if err != nil {
			t.Fatal(err)
		}
		end := lay.Segments[len(lay.Segments)-1].PHi
		for range 20000 {
			pos := rng.Int64N(end + 5000)
			want, werr := lay.Map(pos)
			k := rng.IntN(len(lay.Segments) + 2)
			got, seg, gerr := lay.mapFrom(k, pos)
			if (werr != nil) != (gerr != nil) || got != want {
				t.Fatalf("position %d from segment %d: %d, %v; Map: %d, %v", pos, k, got, gerr, want, werr)
			}
			if gerr == nil && (pos < lay.Segments[seg].PLo || pos >= lay.Segments[seg].PHi) {
				t.Fatalf("position %d reported in segment %d (%d..%d)", pos, seg, lay.Segments[seg].PLo, lay.Segments[seg].PHi)
			}
		}
	}
}
