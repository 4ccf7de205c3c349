package bti

// walkFrame is one node on the in-order walk's path.
type walkFrame struct {
	nd   node
	next int // next child slot to visit
	last int // transition byte of the last visited child, -1 before the first
}

// trieWalker walks an on-disk trie in key order (a node's payload before its children, the
// children by transition byte), reusing its buffers across walks.
type trieWalker struct {
	stack  []walkFrame
	prefix []byte
}

// walk calls visit for every node with payload bits, with the node's path from root. The
// prefix slice is reused: visit must copy what it keeps. Every pointer is checked to point
// backwards inside b, and the walk refuses to visit more nodes than b has bytes, so a
// corrupt file whose pointers form a DAG cannot make it run for long.
func (w *trieWalker) walk(b []byte, root int64, visit func(nd *node, prefix []byte) error) error {
	nd, err := readNode(b, root)
	if err != nil {
		return err
	}
	w.stack, w.prefix = w.stack[:0], w.prefix[:0]
	// Nodes are passed to visit from the stack so that they do not escape one by one.
	w.stack = append(w.stack, walkFrame{nd: nd, last: -1})
	if nd.flags != 0 {
		if err := visit(&w.stack[0].nd, w.prefix); err != nil {
			return err
		}
	}
	visits := 1
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
		pos, err := top.nd.child(b, i)
		if err != nil {
			return err
		}
		if pos < 0 {
			continue
		}
		t := top.nd.transition(b, i)
		if t <= top.last {
			return corruptAt(top.nd.pos, "%s node transitions out of order (%#02x after %#02x)", top.nd.typ, t, top.last)
		}
		top.last = t
		if visits++; visits > len(b) {
			return corruptAt(pos, "trie pointers do not form a tree")
		}
		ch, err := readNode(b, pos)
		if err != nil {
			return err
		}
		w.prefix = append(w.prefix, byte(t))
		w.stack = append(w.stack, walkFrame{nd: ch, last: -1})
		if ch.flags != 0 {
			if err := visit(&w.stack[len(w.stack)-1].nd, w.prefix); err != nil {
				return err
			}
		}
	}
	return nil
}

// follow is Walker.follow: it descends along key while transitions exist and returns the
// node reached and how many key bytes were consumed.
func follow(b []byte, root int64, key []byte) (node, int, error) {
	nd, err := readNode(b, root)
	if err != nil {
		return node{}, 0, err
	}
	for i, c := range key {
		idx := nd.search(b, int(c))
		if idx < 0 {
			return nd, i, nil
		}
		pos, err := nd.child(b, idx)
		if err != nil {
			return node{}, 0, err
		}
		if pos < 0 {
			return nd, i, nil
		}
		if nd, err = readNode(b, pos); err != nil {
			return node{}, 0, err
		}
	}
	return nd, len(key), nil
}
