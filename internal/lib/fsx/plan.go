package fsx

// movePlan splits a Move into a copied head, a cloned middle and a copied tail, in that order,
// contiguous, summing to the request's length.
type movePlan struct {
	head, clone, tail int64
}

// planMove decides what part of [srcOff, srcOff+n) can be cloned to dstOff with block size
// align. FICLONERANGE needs both offsets and the length to be multiples of the block size,
// except that the length may end mid-block exactly at the source's EOF. So:
//
//   - the offsets must be congruent modulo align, otherwise no block of the source lines up
//     with a block of the destination and everything is copied;
//   - the head up to the next block boundary is copied;
//   - the middle is the whole-block run after it, plus the source's final partial block when
//     the request ends at the source's EOF and the destination ends there too or earlier (a
//     partial block cannot be cloned over later destination bytes);
//   - the remaining tail is copied.
//
// A plan with clone == 0 means "copy everything" and has head == n.
func planMove(srcOff, dstOff, n, srcSize, dstSize, align int64) movePlan {
	if align <= 0 || srcOff%align != dstOff%align {
		return movePlan{head: n}
	}
	head := (align - srcOff%align) % align
	if head >= n {
		return movePlan{head: n}
	}
	rest := n - head
	clone := rest - rest%align
	if srcOff+n == srcSize && dstOff+n >= dstSize {
		clone = rest
	}
	if clone == 0 {
		return movePlan{head: n}
	}
	return movePlan{head: head, clone: clone, tail: rest - clone}
}
