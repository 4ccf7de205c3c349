package repair

import (
	"fmt"

	"github.com/sluicedb/sluice/sstable/token"
)

// SyncPlan is what one pair of replicas streams after comparing the digests of the
// partitions in the leaves their trees disagree on.
type SyncPlan struct {
	// Fetch are token ranges to stream from the peer to this side: each covers a run of the
	// peer's partitions this side needs and none it does not (but for partitions sharing a
	// token with one that is needed).
	Fetch token.RangeSet
	// Send are the ranges of this side's partitions the peer needs, likewise.
	Send token.RangeSet
	// Fetched and Sent count the partitions in Fetch and Send.
	Fetched, Sent int
}

// PlanSync decides, per partition, which way it must go. ranges are the (normalized) ranges
// both digest lists cover, each list complete in them and in token order (as Digests and
// ParseDigests give them). A partition only one side holds goes to the other. A partition both
// hold with equal hashes stays. Otherwise it goes to a side unless that side's copies already
// include every copy the other holds (then its reconciliation includes the other's content):
// a replica that missed a flush receives the partition, and the one that had it receives
// nothing.
func PlanSync(ranges token.RangeSet, mine, theirs []Digest) (SyncPlan, error) {
	type id struct {
		tok int64
		key uint64
	}
	index := make(map[id]int, len(theirs))
	for i, d := range theirs {
		index[id{d.Token, d.Key}] = i
	}
	sendMine := make([]bool, len(mine))
	fetchTheirs := make([]bool, len(theirs))
	matched := make([]bool, len(theirs))
	for i, a := range mine {
		j, ok := index[id{a.Token, a.Key}]
		if !ok {
			sendMine[i] = true
			continue
		}
		matched[j] = true
		b := theirs[j]
		if a.Hash == b.Hash {
			continue
		}
		sendMine[i] = !subset(a.Copies, b.Copies)
		fetchTheirs[j] = !subset(b.Copies, a.Copies)
		if !sendMine[i] && !fetchTheirs[j] {
			// The same copies reconciling differently cannot happen on honest replicas;
			// exchanging both ways is the safe answer.
			sendMine[i], fetchTheirs[j] = true, true
		}
	}
	for j := range theirs {
		if !matched[j] {
			fetchTheirs[j] = true
		}
	}
	var p SyncPlan
	var err error
	if p.Send, p.Sent, err = Runs(ranges, mine, sendMine); err != nil {
		return SyncPlan{}, fmt.Errorf("this side's digests: %w", err)
	}
	if p.Fetch, p.Fetched, err = Runs(ranges, theirs, fetchTheirs); err != nil {
		return SyncPlan{}, fmt.Errorf("the peer's digests: %w", err)
	}
	return p, nil
}

// subset reports whether every element of a (sorted) is in b (sorted).
func subset(a, b []uint64) bool {
	j := 0
	for _, x := range a {
		for j < len(b) && b[j] < x {
			j++
		}
		if j == len(b) || b[j] != x {
			return false
		}
	}
	return true
}

// Runs turns the selected partitions of one side's complete, token-ordered listing of ranges
// into token ranges holding them and no unselected partition of the listing: one range per run
// of consecutive selected partitions within one range, from the token of the partition before
// the run (or the range's left end) to the run's last token. It returns the ranges and how many
// partitions they hold.
func Runs(ranges token.RangeSet, list []Digest, selected []bool) (token.RangeSet, int, error) {
	var out token.RangeSet
	n, r := 0, 0
	var left token.Token // where a run starting at the next partition would begin
	open := false        // a run is being extended
	inRange := -1        // the range left belongs to
	for i, d := range list {
		t := token.Token{Kind: token.KindMurmur3, Long: d.Token}
		for r < len(ranges) && !ranges[r].Contains(t) {
			r++
			open = false
		}
		if r == len(ranges) {
			return nil, 0, fmt.Errorf("%w: token %d outside the ranges or out of order", ErrBadDigests, d.Token)
		}
		if inRange != r {
			inRange, left, open = r, ranges[r].Left, false
		}
		if !selected[i] {
			left, open = t, false
			continue
		}
		n++
		if open {
			out[len(out)-1].Right = t
			continue
		}
		if k := len(out); k > 0 && out[k-1].Right.Equal(t) {
			// Selected, unselected and selected again under one token: one range holds them.
			open = true
			continue
		}
		l := left
		if l.Equal(t) {
			// An unselected partition shares the token: it goes along, as a range cannot
			// split a token.
			l = token.Token{Kind: token.KindMurmur3, Long: t.Long - 1}
		}
		out = append(out, token.Range{Left: l, Right: t})
		open = true
	}
	return out, n, nil
}
