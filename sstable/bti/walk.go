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
}

// push reads the node at pos into the next frame.
func (w *trieWalker) push(r *trieReader, pos int64) (*walkFrame, error) {
	if len(w.stack) == cap(w.stack) {
		w.stack = append(w.stack, walkFrame{})
	} else {
		w.stack = w.stack[:len(w.stack)+1]
	}
	f := &w.stack[len(w.stack)-1]
	if err := readNode(r, pos, &f.nd, &f.buf); err != nil {
		return nil, err
	}
	f.next, f.last = 0, -1
	return f, nil
}

// walk calls visit for every node with payload bits, with the node's path from root. The
// prefix slice is reused: visit must copy what it keeps. Every pointer is checked to point
// backwards inside the trie area, and the walk refuses to visit more nodes than the area has
// bytes, so a corrupt file whose pointers form a DAG cannot make it run for long.
func (w *trieWalker) walk(r *trieReader, root int64, visit func(nd *node, prefix []byte) error) error {
	w.stack, w.prefix = w.stack[:0], w.prefix[:0]
	// Nodes are passed to visit from the stack so that they do not escape one by one.
	f, err := w.push(r, root)
	if err != nil {
		return err
	}
	if f.nd.flags != 0 {
		if err := visit(&f.nd, w.prefix); err != nil {
			return err
		}
	}
	visits := int64(1)
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
		if visits++; visits > r.size {
			return corruptAt(pos, "trie pointers do not form a tree")
		}
		ch, err := w.push(r, pos) // top is invalid from here
		if err != nil {
			return err
		}
		w.prefix = append(w.prefix, byte(t))
		if ch.nd.flags != 0 {
			if err := visit(&ch.nd, w.prefix); err != nil {
				return err
			}
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
