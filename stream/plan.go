package stream

import (
	"fmt"

	"github.com/sluicedb/sluice/wire"
)

// Candidate is what the sender knows about one live sstable that intersects the requested
// ranges, gathered by one index pass (slice.Partials): the input of Decide.
type Candidate struct {
	// ID names the parent sstable, e.g. "nb-3-big"; planned IDs derive from it.
	ID string
	// Refusal is slice.Refusal(parent): why zero-copy cannot take it, or "".
	Refusal string
	// DataLength is the parent's uncompressed data length.
	DataLength int64
	// Partitions is the parent's partition count (for an entire transfer).
	Partitions int64
	// FileBytes is the size of every component the entire path would send.
	FileBytes int64
	// Children are the parent's children for the ranges, in Data.db order: one multi-run
	// child, or one per run when the slice bounds refused that (Fallback says why).
	Children []ChildFacts
	Fallback string
}

// ChildFacts is one child piece of a Candidate.
type ChildFacts struct {
	FirstOrdinal, Partitions int64
	Lo, Hi                   int64 // parent uncompressed Data.db span of its partitions
	Runs                     int   // runs of partitions (with gaps between them)
	Bytes                    int64 // bytes the partial path would send (runs + index + rows)
}

// ChildID is the planned ID of a child: the parent's ID and the ordinals of its partitions.
// It is stable for the same parent and ranges, which resume relies on.
func ChildID(parent string, c ChildFacts) string {
	return fmt.Sprintf("%s@%d+%d", parent, c.FirstOrdinal, c.Partitions)
}

// Decide plans one sstable before anything is promised: entire when the children together
// are every partition of the parent (ship the files as they are), rows when zero-copy is
// refused, and otherwise one partial per child. The order of the result is Data.db order.
func Decide(c Candidate) []wire.PlannedSSTable {
	if len(c.Children) == 0 {
		return nil
	}
	if covers(c) && c.Refusal == "" {
		return []wire.PlannedSSTable{{ID: c.ID, Kind: wire.KindEntire, Reason: "the ranges cover every partition",
			Bytes: uint64(c.FileBytes), Partitions: uint64(c.Partitions)}}
	}
	out := make([]wire.PlannedSSTable, 0, len(c.Children))
	for _, ch := range c.Children {
		p := wire.PlannedSSTable{ID: ChildID(c.ID, ch), Kind: wire.KindPartial, Bytes: uint64(ch.Bytes), Partitions: uint64(ch.Partitions),
			Reason: fmt.Sprintf("%d of %d partitions in %d runs, from ordinal %d", ch.Partitions, c.Partitions, ch.Runs, ch.FirstOrdinal)}
		if c.Fallback != "" {
			p.Reason += "; one sstable per run: " + c.Fallback
		}
		if c.Refusal != "" {
			p.Kind, p.Reason = wire.KindRows, c.Refusal
		}
		out = append(out, p)
	}
	return out
}

// covers says whether the children are every partition of the parent, one run each, so
// that the parent's files as they are are exactly what was asked for (a wrapping range gives
// two children that meet).
func covers(c Candidate) bool {
	var n int64
	for i, ch := range c.Children {
		if (i > 0 && ch.Lo != c.Children[i-1].Hi) || ch.Runs > 1 {
			return false
		}
		n += ch.Partitions
	}
	return n == c.Partitions && c.Partitions > 0
}
