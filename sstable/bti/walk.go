package bti

// walkFrame is one node on the in-order walk's path. buf holds the node's bytes when the trie
// is paged, so the node stays valid while the walk reads its descendants; frames (and their
// buffers) are reused across walks.
type walkFrame struct {
	nd   node
	next int // next child slot to visit
	last int // transition byte of the last visited child, -1 before the first
	buf  []byte
}

// trieWalker walks an on-disk trie in key order (a node's payload before its children, the
// children by transition byte), reusing its buffers across walks.
type trieWalker struct {
	stack  []walkFrame
	prefix []byte
	visits int64 // nodes read by the current walk
}

// read decodes the node at pos into the frame above the top of the stack without pushing it:
// the caller pushes it (commit) only when it has children, so a leaf, most of a partition
// index's nodes, costs no push and pop. The frame is valid until the next read.
func (w *trieWalker) read(r *trieReader, pos int64) (*walkFrame, error) {
	if w.visits++; w.visits > r.size {
		return nil, corruptAt(pos, "trie pointers do not form a tree")
	}
	if len(w.stack) == cap(w.stack) {
		w.stack = append(w.stack, walkFrame{})[:len(w.stack)]
	}
	f := &w.stack[:len(w.stack)+1][len(w.stack)]
	if err := readNode(r, pos, &f.nd, &f.buf); err != nil {
		return nil, err
	}
	f.next, f.last = 0, -1
	return f, nil
}

// commit pushes the frame read last.
func (w *trieWalker) commit() { w.stack = w.stack[:len(w.stack)+1] }

// walk calls visit for every node with payload bits, with the node's path from root. The
// prefix slice is reused: visit must copy what it keeps. Every pointer is checked to point
// backwards inside the trie area, and the walk refuses to visit more nodes than the area has
// bytes, so a corrupt file whose pointers form a DAG cannot make it run for long.
func (w *trieWalker) walk(r *trieReader, root int64, visit func(nd *node, prefix []byte) error) error {
	return w.walkFrom(r, root, nil, visit)
}

// walkFrom is walk starting at from: the nodes whose path sorts below from are not visited,
// except the one where from's descent ends (the deepest node on from's path), whose payload,
// its path a prefix of from, is the entry a lookup of from finds. A from nil or empty walks
// the whole trie.
func (w *trieWalker) walkFrom(r *trieReader, root int64, from []byte, visit func(nd *node, prefix []byte) error) error {
	w.stack, w.prefix, w.visits = w.stack[:0], w.prefix[:0], 0
	f, err := w.read(r, root)
	if err != nil {
		return err
	}
	w.commit()
	// Descend along from: each frame on the way resumes after the transition followed.
	consumed := 0
	for _, c := range from {
		top := &w.stack[len(w.stack)-1]
		i := top.nd.search(int(c))
		if i < 0 {
			// No child for c: resume at the first slot above it.
			top.next, top.last = top.nd.above(int(c)), int(c)
			break
		}
		pos, err := top.nd.child(i)
		if err != nil {
			return err
		}
		top.next, top.last = i+1, int(c)
		if pos < 0 {
			break // an empty dense slot: no child for c
		}
		if f, err = w.read(r, pos); err != nil {
			return err
		}
		w.commit()
		w.prefix = append(w.prefix, c)
		consumed++
	}
	// f is the node the descent ended on, its path a prefix of from (all of it, or where the
	// trie has no transition for from's next byte): its payload is the entry Lookup finds
	// when it is all of from or f is a leaf, and is visited then; then whatever the frames on
	// the path have left.
	if f.nd.flags != 0 && (consumed == len(from) || f.nd.n == 0) {
		if err := visit(&f.nd, w.prefix); err != nil {
			return err
		}
	}
	for len(w.stack) > 0 {
		top := &w.stack[len(w.stack)-1]
		if top.next >= top.nd.n {
			w.stack = w.stack[:len(w.stack)-1]
			if len(w.stack) > 0 {
				w.prefix = w.prefix[:len(w.prefix)-1]
			}
			continue
		}
		i := top.next
		top.next++
		pos, err := top.nd.child(i)
		if err != nil {
			return err
		}
		if pos < 0 {
			continue
		}
		t := top.nd.transition(i)
		if t <= top.last {
			return corruptAt(top.nd.pos, "%s node transitions out of order (%#02x after %#02x)", top.nd.typ, t, top.last)
		}
		top.last = t
		ch, err := w.read(r, pos) // top is invalid once ch is pushed
		if err != nil {
			return err
		}
		w.prefix = append(w.prefix, byte(t))
		if ch.nd.flags != 0 {
			if err := visit(&ch.nd, w.prefix); err != nil {
				return err
			}
		}
		if ch.nd.n > 0 {
			w.commit()
		} else {
			w.prefix = w.prefix[:len(w.prefix)-1]
		}
	}
	return nil
}

// follow is Walker.follow: it descends along key while transitions exist and returns the
// node reached and how many key bytes were consumed. The node aliases *buf when paged.
func follow(r *trieReader, root int64, key []byte, buf *[]byte) (node, int, error) {
	var nd node
	if err := readNode(r, root, &nd, buf); err != nil {
		return node{}, 0, err
	}
	for i, c := range key {
		idx := nd.search(int(c))
		if idx < 0 {
			return nd, i, nil
		}
		pos, err := nd.child(idx)
		if err != nil {
			return node{}, 0, err
		}
		if pos < 0 {
			return nd, i, nil
		}
		if err := readNode(r, pos, &nd, buf); err != nil {
			return node{}, 0, err
		}
	}
	return nd, len(key), nil
}
