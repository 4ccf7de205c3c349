package bti

import (
	"fmt"
	"io"
)

// pageSize is io/util/PageAware.PAGE_SIZE; no trie node crosses a multiple of it.
const pageSize = 4096

// payload is the value stored at a trie node: a partition-index position and hash byte, or
// a row-index block offset and open marker. set distinguishes "no payload".
type payload struct {
	set  bool
	pos  int64
	hash byte
	del  DeletionTime
}

// payloadCodec is TrieSerializer's payload half: how payloads are sized, flagged and written.
type payloadCodec uint8

const (
	partitionPayloads payloadCodec = iota // PartitionIndex.PartitionIndexSerializer
	rowPayloads                           // RowIndexReader.getSerializer
)

func (c payloadCodec) size(p *payload) int {
	if !p.set {
		return 0
	}
	if c == partitionPayloads {
		return 1 + nonZeroSize(p.pos)
	}
	n := nonZeroSize(p.pos)
	if !p.del.IsLive() {
		n += deletionTimeSize
	}
	return n
}

func (c payloadCodec) bits(p *payload) int {
	if !p.set {
		return 0
	}
	if c == partitionPayloads {
		return flagHasHashByte + nonZeroSize(p.pos) - 1
	}
	bits := nonZeroSize(p.pos)
	if !p.del.IsLive() {
		bits |= flagOpenMarker
	}
	return bits
}

func (c payloadCodec) append(dst []byte, p *payload) []byte {
	if !p.set {
		return dst
	}
	if c == partitionPayloads {
		dst = append(dst, p.hash)
		return appendSized(dst, p.pos, nonZeroSize(p.pos))
	}
	dst = appendSized(dst, p.pos, nonZeroSize(p.pos))
	if !p.del.IsLive() {
		dst = appendDeletion(dst, p.del)
	}
	return dst
}

// wnode is IncrementalTrieWriterPageAware.Node.
type wnode struct {
	children   []*wnode
	transition int // 0..255; 256 only for the layout comparison sentinel
	filePos    int64
	branchSize int
	nodeSize   int
	// hasOutOfPageInBranch: a node below the immediate children is already written.
	hasOutOfPageInBranch bool
	// hasOutOfPageChildren: an immediate child is already written. New nodes start with it
	// set, as Java's do, which makes maxPositionDelta consider every child while sizing.
	hasOutOfPageChildren bool
	// packed: the node's branch is serialised in the writer's arena from mark on (its
	// children released); see trieWriter.pack.
	packed bool
	mark   int // len(trieWriter.arena) when the node was made: where its branch's bytes start
	// placed replaces children once they are all written and n waits only to be written
	// itself (trieWriter.place): their transitions and positions are all its serialisation
	// needs, in 16 bytes a child instead of a node.
	placed  []placedChild
	payload payload
}

// placedChild is a written child of a node: its transition and file position.
type placedChild struct {
	pos        int64
	transition int
}

func (n *wnode) childCount() int {
	if n.placed != nil {
		return len(n.placed)
	}
	return len(n.children)
}

func (n *wnode) childTransition(i int) int {
	if n.placed != nil {
		return n.placed[i].transition
	}
	return n.children[i].transition
}

// childPos is child i's file position, -1 while it is not written.
func (n *wnode) childPos(i int) int64 {
	if n.placed != nil {
		return n.placed[i].pos
	}
	return n.children[i].filePos
}

// maxPositionDelta is Node.maxPositionDelta: the most negative distance to a child, either
// an already placed one or where the first unplaced child will be laid out.
func (n *wnode) maxPositionDelta(nodePos int64) int64 {
	if !n.hasOutOfPageChildren {
		return -int64(n.branchSize - n.children[0].branchSize)
	}
	minPlaced, minUnplaced := int64(0), int64(1)
	for _, p := range n.placed {
		minPlaced = min(minPlaced, p.pos-nodePos)
	}
	for _, ch := range n.children {
		if ch.filePos != -1 {
			minPlaced = min(minPlaced, ch.filePos-nodePos)
		} else if minUnplaced > 0 {
			minUnplaced = -int64(n.branchSize - ch.branchSize)
		}
	}
	return min(minPlaced, minUnplaced)
}

// pagedOutput is the page-aware DataOutputPlus the trie is written to: a position counter
// over a buffer that is flushed to w in large pieces.
type pagedOutput struct {
	w       io.Writer
	buf     []byte
	flushed int64
	err     error
}

const flushThreshold = 64 << 10

func (o *pagedOutput) position() int64      { return o.flushed + int64(len(o.buf)) }
func (o *pagedOutput) bytesLeftInPage() int { return pageSize - int(o.position()&(pageSize-1)) }
func (o *pagedOutput) paddedPosition() int64 {
	return (o.position() + pageSize - 1) &^ (pageSize - 1)
}

func (o *pagedOutput) padToPageBoundary() {
	for n := o.paddedPosition() - o.position(); n > 0; n-- {
		o.buf = append(o.buf, 0)
	}
}

func (o *pagedOutput) maybeFlush() {
	if len(o.buf) >= flushThreshold {
		o.flush()
	}
}

func (o *pagedOutput) flush() error {
	if o.err != nil || len(o.buf) == 0 {
		return o.err
	}
	n, err := o.w.Write(o.buf)
	o.flushed += int64(n)
	if err == nil && n != len(o.buf) {
		err = io.ErrShortWrite
	}
	o.buf = o.buf[:0]
	o.err = err
	return err
}

// trieWriter is IncrementalDeepTrieWriterPageAware: it takes keys in strictly increasing
// order, keeps only the path of the last key and the not yet written branches below it,
// and writes completed branches bottom-up, packing them into pages.
//
// A completed branch smaller than a page waits until its parent is laid out, and a node whose
// children were laid out waits with them until it is written itself. Cassandra keeps both as
// nodes; with random keys that peaks at about 133,000 nodes (14 MiB here) for a partition
// index of 10M keys and grows with the key count up to where such branches fill pages. This
// writer keeps the same layout in less: a waiting branch that points at nothing written is
// position-independent (its pointers are distances within it), so it is serialised at once
// into the arena and one node stands for it (pack); a node whose children are all written
// keeps only their transitions and positions (place). What stays is a few hundred nodes, the
// arena (below a page per waiting branch) and 16 bytes per placed child.
type trieWriter struct {
	out   *pagedOutput
	codec payloadCodec
	stack []*wnode
	count int64
	prev  []byte
	added bool
	// arena holds the packed branches in the order their nodes completed (post-order, the
	// order write lays a branch out), so a node's branch is its children's, back to back,
	// then its own node: packing appends one node and copies nothing. Everything from a
	// node's mark on belongs to its subtree, so once a node's children are all written the
	// arena is cut back to its mark.
	arena []byte

	free     []*wnode           // recycled nodes
	slices   [7][][]*wnode      // recycled children slices by capacity class 4<<i
	placed   [7][][]placedChild // recycled placed slices by capacity class 4<<i
	scratch  [][]*wnode         // layoutChildren working sets, one per recursion depth
	depth    int
	sentinel wnode
}

func newTrieWriter(out *pagedOutput, codec payloadCodec) *trieWriter {
	tw := &trieWriter{out: out, codec: codec}
	tw.stack = append(tw.stack, tw.newNode(0))
	return tw
}

func (tw *trieWriter) newNode(transition int) *wnode {
	var n *wnode
	if k := len(tw.free); k > 0 {
		n = tw.free[k-1]
		tw.free = tw.free[:k-1]
		*n = wnode{}
	} else {
		n = &wnode{}
	}
	n.transition = transition
	n.mark = len(tw.arena)
	n.filePos = -1
	n.branchSize, n.nodeSize = -1, -1
	n.hasOutOfPageChildren = true
	return n
}

// release returns a written subtree's nodes to the free list. Only nodes whose parent is
// finalized are released: the parent no longer needs their positions.
func (tw *trieWriter) release(n *wnode) {
	for _, ch := range n.children {
		tw.release(ch)
	}
	tw.putChildren(n)
	tw.putPlaced(n)
	tw.free = append(tw.free, n)
}

// appendChild adds a child, growing the children slice from the recycled ones so that a
// writer in steady state allocates nothing (Java recycles its child lists the same way).
func (tw *trieWriter) appendChild(n, ch *wnode) {
	if len(n.children) == cap(n.children) {
		class := 0
		for 4<<class <= cap(n.children) {
			class++
		}
		var s []*wnode
		if free := tw.slices[class]; len(free) > 0 {
			s = free[len(free)-1]
			tw.slices[class] = free[:len(free)-1]
		} else {
			s = make([]*wnode, 0, 4<<class)
		}
		s = append(s, n.children...)
		tw.putChildren(n)
		n.children = s
	}
	n.children = append(n.children, ch)
}

// sizeClass is the class of a recycled slice of capacity c: the smallest 4<<class >= c.
func sizeClass(c int) int {
	class := 0
	for 4<<class < c {
		class++
	}
	return class
}

// place replaces n's children, every one written, by their placed records, and releases
// them: a node whose children were laid out because its branch passed a page waits for its
// parent's layout. With random keys the root's children wait so until the very end, holding
// the root's grandchildren: 32,000 of them for half the Murmur3 ring, whatever the key count
// past a few hundred thousand.
func (tw *trieWriter) place(n *wnode) error {
	class := sizeClass(len(n.children))
	var ps []placedChild
	if free := tw.placed[class]; len(free) > 0 {
		ps = free[len(free)-1]
		tw.placed[class] = free[:len(free)-1]
	} else {
		ps = make([]placedChild, 0, 4<<class)
	}
	for _, ch := range n.children {
		if ch.filePos == -1 {
			return fmt.Errorf("%w: placing child %#x, which is not written", errInternal, ch.transition)
		}
		ps = append(ps, placedChild{pos: ch.filePos, transition: ch.transition})
		tw.release(ch)
	}
	tw.putChildren(n)
	n.placed = ps
	return nil
}

// putPlaced recycles n's placed slice.
func (tw *trieWriter) putPlaced(n *wnode) {
	if c := cap(n.placed); c > 0 {
		class := sizeClass(c)
		tw.placed[class] = append(tw.placed[class], n.placed[:0])
	}
	n.placed = nil
}

// putChildren recycles n's children slice (its capacity is always 4<<class or zero).
func (tw *trieWriter) putChildren(n *wnode) {
	if c := cap(n.children); c > 0 {
		clear(n.children)
		class := 0
		for 4<<class < c {
			class++
		}
		tw.slices[class] = append(tw.slices[class], n.children[:0])
	}
	n.children = nil
}

// finalize is Node.finalizeWithPosition.
func (tw *trieWriter) finalize(n *wnode, pos int64) {
	n.branchSize, n.nodeSize = 0, 0
	n.hasOutOfPageInBranch, n.hasOutOfPageChildren = false, false
	n.filePos = pos
	for _, ch := range n.children {
		tw.release(ch)
	}
	tw.putChildren(n)
	tw.putPlaced(n)
	n.payload = payload{}
	n.packed = false
}

// reset drops everything (IncrementalTrieWriterPageAware.reset) so the writer can build
// another trie into the same output.
func (tw *trieWriter) reset() {
	for _, n := range tw.stack[:1] {
		tw.release(n)
	}
	tw.arena = tw.arena[:0]
	tw.stack = append(tw.stack[:0], tw.newNode(0))
	tw.count, tw.added, tw.prev = 0, false, tw.prev[:0]
}

// add is IncrementalTrieWriterBase.add.
func (tw *trieWriter) add(key []byte, p payload) error {
	stackpos := 0
	if tw.added {
		l := commonPrefix(tw.prev, key)
		if l == len(key) || (l < len(tw.prev) && tw.prev[l] > key[l]) {
			return fmt.Errorf("%w: trie key %x after %x", ErrUnsorted, key, tw.prev)
		}
		stackpos = l
	}
	tw.count++
	tw.added = true
	tw.prev = append(tw.prev[:0], key...)
	for len(tw.stack) > stackpos+1 {
		if err := tw.completeLast(); err != nil {
			return err
		}
	}
	n := tw.stack[len(tw.stack)-1]
	for _, c := range key[stackpos:] {
		ch := tw.newNode(int(c))
		tw.appendChild(n, ch)
		n = ch
		tw.stack = append(tw.stack, n)
	}
	if n.payload.set {
		return fmt.Errorf("%w: duplicate trie key %x", ErrUnsorted, key)
	}
	n.payload = p
	return tw.out.err
}

func commonPrefix(a, b []byte) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

func (tw *trieWriter) completeLast() error {
	n := tw.stack[len(tw.stack)-1]
	tw.stack = tw.stack[:len(tw.stack)-1]
	return tw.complete(n)
}

func (tw *trieWriter) sizeofNode(n *wnode, nodePos int64) int {
	return sizeofType(typeFor(n, nodePos), n) + tw.codec.size(&n.payload)
}

// complete is IncrementalTrieWriterPageAware.complete: a node whose branch still fits a
// page stays in memory; otherwise its children are laid out now.
func (tw *trieWriter) complete(n *wnode) error {
	branchSize := 0
	for _, ch := range n.children {
		branchSize += ch.branchSize + ch.nodeSize
	}
	n.branchSize = branchSize
	nodeSize := tw.sizeofNode(n, tw.out.position())
	if nodeSize+branchSize < pageSize {
		n.nodeSize = nodeSize
		n.hasOutOfPageChildren, n.hasOutOfPageInBranch = false, false
		for _, ch := range n.children {
			if ch.filePos != -1 {
				n.hasOutOfPageChildren = true
			} else if ch.hasOutOfPageChildren || ch.hasOutOfPageInBranch {
				n.hasOutOfPageInBranch = true
			}
		}
		if !n.hasOutOfPageChildren && !n.hasOutOfPageInBranch {
			return tw.pack(n)
		}
		return nil
	}
	if err := tw.layoutChildren(n); err != nil {
		return err
	}
	// Every branch below n is written now, and only n's subtree wrote into the arena since
	// n was made.
	tw.arena = tw.arena[:n.mark]
	if len(n.children) > 0 {
		return tw.place(n)
	}
	return nil
}

// pack serialises n, a completed node whose branch is below a page and points at nothing
// written, after its children's branches in the arena, and releases its children: n alone
// stands for its branch from then on, and write copies the bytes out. Its children are
// packed already (a branch with nothing written below is packed when it completes), and
// their bytes end the arena in order, so n's node is all there is to append. Positions in
// the arena are relative, but a node encodes only distances to its children, which are the
// same wherever the branch lands.
func (tw *trieWriter) pack(n *wnode) error {
	if len(tw.arena) != n.mark+n.branchSize {
		return fmt.Errorf("%w: branch of %d bytes at arena %d, arena ends at %d", errInternal, n.branchSize, n.mark, len(tw.arena))
	}
	for _, ch := range n.children {
		if !ch.packed {
			return fmt.Errorf("%w: packing a node over an unpacked child %#x", errInternal, ch.transition)
		}
		ch.filePos = int64(ch.mark + ch.branchSize) // relative to the arena, as nodePos
	}
	nodePos := int64(len(tw.arena))
	t := typeFor(n, nodePos)
	var err error
	tw.arena, err = appendNodeBody(tw.arena, t, n, tw.codec.bits(&n.payload), nodePos)
	if err != nil {
		return err
	}
	tw.arena = tw.codec.append(tw.arena, &n.payload)
	if got := len(tw.arena) - int(nodePos); got != n.nodeSize {
		return fmt.Errorf("%w: packed node is %d bytes, sized as %d", errInternal, got, n.nodeSize)
	}
	for _, ch := range n.children {
		tw.release(ch)
	}
	tw.putChildren(n)
	n.packed = true
	return nil
}

// branchLess is BRANCH_SIZE_COMPARATOR: by total branch size, then by transition.
func branchLess(l, r *wnode) bool {
	ls, rs := l.branchSize+l.nodeSize, r.branchSize+r.nodeSize
	if ls != rs {
		return ls < rs
	}
	return l.transition < r.transition
}

// insertSorted adds n to a slice kept in branchLess order (the Java TreeSet).
func insertSorted(set []*wnode, n *wnode) []*wnode {
	i := above(set, n)
	set = append(set, nil)
	copy(set[i+1:], set[i:])
	set[i] = n
	return set
}

// above is the index of the first node of set (in branchLess order) that n sorts below, or
// len(set): a binary search, the nodes of a wide branch being many.
func above(set []*wnode, n *wnode) int {
	lo, hi := 0, len(set)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if branchLess(n, set[m]) {
			hi = m
		} else {
			lo = m + 1
		}
	}
	return lo
}

// layoutChildren is IncrementalTrieWriterPageAware.layoutChildren: write the node's
// unwritten children, largest that fits the current page first, starting a new page when
// none fits.
func (tw *trieWriter) layoutChildren(n *wnode) error {
	if tw.depth == len(tw.scratch) {
		tw.scratch = append(tw.scratch, nil)
	}
	set := tw.scratch[tw.depth][:0]
	tw.depth++
	defer func() { tw.depth-- }()
	for _, ch := range n.children {
		if ch.filePos == -1 {
			set = insertSorted(set, ch)
		}
	}
	bytesLeft := tw.out.bytesLeftInPage()
	cmp := &tw.sentinel
	cmp.transition, cmp.nodeSize = 256, 0
	for len(set) > 0 {
		// headSet(cmp, inclusive).pollLast(): the biggest child that is <= cmp.
		cmp.branchSize = bytesLeft
		idx := above(set, cmp) - 1
		if idx < 0 {
			tw.out.padToPageBoundary()
			bytesLeft = pageSize
			idx = len(set) - 1
		}
		ch := set[idx]
		set = append(set[:idx], set[idx+1:]...)
		if ch.hasOutOfPageChildren || ch.hasOutOfPageInBranch {
			// Its size depends on where it goes; re-evaluate now that we know.
			actual := tw.recalcTotalSize(ch, tw.out.position())
			if actual > bytesLeft {
				if bytesLeft == pageSize {
					// The branch does not fit even a whole page: split it further.
					tw.scratch[tw.depth-1] = set
					if err := tw.layoutChildren(ch); err != nil {
						return err
					}
					set = tw.scratch[tw.depth-1]
					bytesLeft = tw.out.bytesLeftInPage()
				}
				set = insertSorted(set, ch)
				continue
			}
		}
		pos, err := tw.write(ch)
		if err != nil {
			return err
		}
		tw.finalize(ch, pos)
		bytesLeft = tw.out.bytesLeftInPage()
		tw.out.maybeFlush()
	}
	tw.scratch[tw.depth-1] = set
	n.branchSize = 0
	n.hasOutOfPageChildren, n.hasOutOfPageInBranch = true, false
	n.nodeSize = tw.sizeofNode(n, tw.out.position())
	return tw.out.err
}

// recalcTotalSize is IncrementalTrieWriterPageAware.recalcTotalSize.
func (tw *trieWriter) recalcTotalSize(n *wnode, nodePos int64) int {
	if n.hasOutOfPageInBranch {
		sz := 0
		for _, ch := range n.children {
			sz += tw.recalcTotalSize(ch, nodePos+int64(sz))
		}
		n.branchSize = sz
	}
	if n.hasOutOfPageChildren || n.hasOutOfPageInBranch {
		n.nodeSize = tw.sizeofNode(n, nodePos+int64(n.branchSize))
	}
	return n.branchSize + n.nodeSize
}

// write is IncrementalTrieWriterPageAware.write: the unwritten children, depth first, then
// the node itself right after them.
func (tw *trieWriter) write(n *wnode) (int64, error) {
	nodePos := tw.out.position()
	if n.packed {
		tw.out.buf = append(tw.out.buf, tw.arena[n.mark:n.mark+n.branchSize+n.nodeSize]...)
		return nodePos + int64(n.branchSize), nil
	}
	for _, ch := range n.children {
		if ch.filePos == -1 {
			p, err := tw.write(ch)
			if err != nil {
				return 0, err
			}
			ch.filePos = p
		}
	}
	nodePos += int64(n.branchSize)
	if got := tw.out.position(); got != nodePos {
		return 0, fmt.Errorf("%w: node expected at %d, children ended at %d", errInternal, nodePos, got)
	}
	t := typeFor(n, nodePos)
	var err error
	tw.out.buf, err = appendNodeBody(tw.out.buf, t, n, tw.codec.bits(&n.payload), nodePos)
	if err != nil {
		return 0, err
	}
	tw.out.buf = tw.codec.append(tw.out.buf, &n.payload)
	if got := tw.out.position(); got != nodePos+int64(n.nodeSize) && tw.out.paddedPosition() != got {
		return 0, fmt.Errorf("%w: node at %d is %d bytes, sized as %d", errInternal, nodePos, got-nodePos, n.nodeSize)
	}
	return nodePos, nil
}

// finish is IncrementalTrieWriterPageAware.performCompletion: complete the remaining path,
// then place the root branch, padding to a new page when it fits one but not the current.
// It returns the root position.
func (tw *trieWriter) finish() (int64, error) {
	var root *wnode
	for len(tw.stack) > 0 {
		root = tw.stack[len(tw.stack)-1]
		if err := tw.completeLast(); err != nil {
			return 0, err
		}
	}
	tw.stack = append(tw.stack, root)
	actual := tw.recalcTotalSize(root, tw.out.position())
	bytesLeft := tw.out.bytesLeftInPage()
	if actual > bytesLeft {
		if actual <= pageSize {
			tw.out.padToPageBoundary()
			bytesLeft = pageSize
			actual = tw.recalcTotalSize(root, tw.out.position())
		}
		if actual > bytesLeft {
			if err := tw.layoutChildren(root); err != nil {
				return 0, err
			}
			if root.nodeSize > tw.out.bytesLeftInPage() {
				tw.out.padToPageBoundary()
				tw.recalcTotalSize(root, tw.out.position())
			}
		}
	}
	pos, err := tw.write(root)
	if err != nil {
		return 0, err
	}
	tw.finalize(root, pos)
	tw.arena = tw.arena[:0]
	return pos, tw.out.err
}
