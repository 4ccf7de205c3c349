package repair

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/sluicedb/sluice/sstable"
	"github.com/sluicedb/sluice/sstable/schema"
	"github.com/sluicedb/sluice/sstable/token"
)

// Spec asks for one tree: a range and a depth.
type Spec struct {
	Range token.Range
	Depth int
}

// checkRange accepts the ranges trees are built for: Murmur3 ranges that do not wrap, except
// to the end of the ring (normalized ranges, as ring.Normalize returns them), so that the
// ring's token order is each range's order.
func checkRange(r token.Range) error {
	if r.Left.Kind != token.KindMurmur3 || r.Right.Kind != token.KindMurmur3 {
		return fmt.Errorf("%w: range %v is not a Murmur3 range", ErrBadTree, r)
	}
	if r.IsWrapping() && !r.Right.Equal(token.Murmur3.MinToken()) {
		return fmt.Errorf("%w: range %v wraps (normalize it first)", ErrBadTree, r)
	}
	return nil
}

// Count returns, for each range, how many index entries the tables hold in it (a partition
// held by several tables counts once per table): the estimate DepthFor takes. It reads only the
// index components.
func Count(tables []*sstable.Table, ranges token.RangeSet) ([]int64, error) {
	out := make([]int64, len(ranges))
	for _, t := range tables {
		err := t.ScanPartitions(func(p *sstable.Partition) error {
			for i, r := range ranges {
				if r.Contains(p.Token) {
					out[i]++
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// entry is one partition of one table, its key copied.
type entry struct {
	key      []byte
	tok      token.Token
	pos, end int64
}

// batchSize is how many index entries a scanner hands over at once.
const batchSize = 256

// scanner feeds one table's index entries in token order, each with the end of its bytes.
type scanner struct {
	t      *sstable.Table
	schema *schema.Table
	ch     chan []entry
	err    error // set before ch closes
	batch  []entry
	i      int
	buf    []byte
}

func (s *scanner) run(ctx context.Context) {
	defer close(s.ch)
	var batch []entry
	var pending *entry
	send := func() bool {
		select {
		case s.ch <- batch:
			batch = make([]entry, 0, batchSize)
			return true
		case <-ctx.Done():
			return false
		}
	}
	batch = make([]entry, 0, batchSize)
	err := s.t.ScanPartitions(func(p *sstable.Partition) error {
		if pending != nil {
			pending.end = p.Position
		}
		if len(batch) == batchSize {
			if !send() {
				return ctx.Err()
			}
		}
		batch = append(batch, entry{key: append([]byte(nil), p.Key...), tok: p.Token, pos: p.Position})
		if p.Token.Kind == token.KindBytes {
			batch[len(batch)-1].tok.Bytes = batch[len(batch)-1].key
		}
		pending = &batch[len(batch)-1]
		return nil
	})
	if err == nil && pending != nil {
		pending.end = s.t.DataLength()
	}
	if err == nil && len(batch) > 0 && !send() {
		err = ctx.Err()
	}
	s.err = err
}

// head returns the scanner's current entry, receiving the next batch when needed; ok is false
// when the table is exhausted.
func (s *scanner) head(ctx context.Context) (*entry, bool, error) {
	for s.i >= len(s.batch) {
		select {
		case b, open := <-s.ch:
			if !open {
				return nil, false, s.err
			}
			s.batch, s.i = b, 0
		case <-ctx.Done():
			return nil, false, ctx.Err()
		}
	}
	return &s.batch[s.i], true, nil
}

// Partition is one reconciled partition Walk hands over: its key and token, the hash of its
// reconciled content (Hasher), and for each table holding it (by index into Walk's tables) the
// length of its serialized copy there (to its end-of-partition flag).
type Partition struct {
	Key    []byte
	Token  token.Token
	Hash   uint64
	Tables []int
	Bytes  []int64
	// Copies are the reconciled hashes of each table's copy on its own, sorted and without
	// repeats; filled only by walks that ask for them (Digests).
	Copies []uint64
}

// Walk merges the tables in token order and calls fn once per distinct partition for which
// want(token) is true (every partition when want is nil), with its reconciled hash; each
// partition's bytes are read once. The Partition and its slices are reused after fn returns.
// The tables stay open; Walk only reads them.
func Walk(ctx context.Context, tables []*sstable.Table, want func(token.Token) bool, fn func(p *Partition) error) error {
	return walk(ctx, tables, want, false, fn)
}

// walk is Walk, also hashing each copy on its own into Partition.Copies when copies is set.
func walk(ctx context.Context, tables []*sstable.Table, want func(token.Token) bool, copies bool, fn func(p *Partition) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	scs := make([]*scanner, len(tables))
	for i, t := range tables {
		st, err := schema.Compile(t.Statistics.Header)
		if err != nil {
			return fmt.Errorf("%s: %w", t.Desc.Prefix(), err)
		}
		scs[i] = &scanner{t: t, schema: st, ch: make(chan []entry, 1)}
	}
	var wg sync.WaitGroup
	for _, s := range scs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.run(ctx)
		}()
	}
	defer wg.Wait()
	defer cancel() // runs before wg.Wait, ending the scanners

	h := NewHasher()
	var srcs []Source
	var group []int
	var p Partition
	heads := make([]*entry, len(scs))
	var count int
	for {
		m := -1
		for i, s := range scs {
			if heads[i] == nil {
				e, ok, err := s.head(ctx)
				if err != nil {
					return fmt.Errorf("%s: %w", s.t.Desc.Prefix(), err)
				}
				if !ok {
					continue
				}
				heads[i] = e
			}
			if m < 0 || token.CompareKeys(heads[i].tok, heads[i].key, heads[m].tok, heads[m].key) < 0 {
				m = i
			}
		}
		if m < 0 {
			return nil
		}
		group = group[:0]
		for i := range scs {
			if heads[i] != nil && token.CompareKeys(heads[i].tok, heads[i].key, heads[m].tok, heads[m].key) == 0 {
				group = append(group, i)
			}
		}
		tok := heads[m].tok
		if want == nil || want(tok) {
			count++
			if count%1024 == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			srcs = srcs[:0]
			p.Tables, p.Bytes = p.Tables[:0], p.Bytes[:0]
			for _, i := range group {
				s, e := scs[i], heads[i]
				if e.end < e.pos {
					return fmt.Errorf("%s: %w: partition at %d ends at %d", s.t.Desc.Prefix(), ErrMismatch, e.pos, e.end)
				}
				if n := int(e.end - e.pos); cap(s.buf) < n {
					s.buf = make([]byte, n)
				} else {
					s.buf = s.buf[:n]
				}
				if _, err := s.t.Data.ReadAt(s.buf, e.pos); err != nil {
					return fmt.Errorf("%s: partition at %d: %w", s.t.Desc.Prefix(), e.pos, err)
				}
				if sstable.IsFiller(s.schema, s.t.Version(), s.buf) {
					// A filler partition holds nothing: as Cassandra's validation drops an
					// empty partition, it is no copy of anything.
					continue
				}
				srcs = append(srcs, Source{Table: s.schema, Version: s.t.Version(), Data: s.buf})
				p.Tables, p.Bytes = append(p.Tables, i), append(p.Bytes, e.end-e.pos)
			}
			if len(srcs) == 0 {
				for _, i := range group {
					scs[i].i++
					heads[i] = nil
				}
				continue
			}
			sum, err := h.Hash(srcs)
			if err != nil {
				return fmt.Errorf("%s: partition at %d: %w", scs[group[0]].t.Desc.Prefix(), heads[group[0]].pos, err)
			}
			for k := range p.Bytes {
				// Each copy's length to its end-of-partition flag, past any dead region.
				if h.curs[k].Done() {
					p.Bytes[k] = int64(h.curs[k].End())
				}
			}
			if p.Copies = p.Copies[:0]; copies {
				// After the lengths above: hashing a copy alone resets the cursors.
				for k := range srcs {
					c := sum // one copy is its own reconciliation
					if len(srcs) > 1 {
						if c, err = h.Hash(srcs[k : k+1]); err != nil {
							return fmt.Errorf("%s: partition at %d: %w", scs[group[k]].t.Desc.Prefix(), heads[group[k]].pos, err)
						}
					}
					p.Copies = append(p.Copies, c)
				}
				slices.Sort(p.Copies)
				p.Copies = slices.Compact(p.Copies)
			}
			p.Key, p.Token, p.Hash = heads[m].key, tok, sum
			if err := fn(&p); err != nil {
				return err
			}
		}
		for _, i := range group {
			scs[i].i++
			heads[i] = nil
		}
	}
}

// Build builds one tree per spec over the partitions the tables hold (Walk). Spec ranges must
// be normalized (no wrapping except to the end of the ring). The tables stay open; Build only
// reads them.
func Build(ctx context.Context, tables []*sstable.Table, specs []Spec) ([]*Tree, error) {
	builders := make([]*Builder, len(specs))
	for i, sp := range specs {
		if err := checkRange(sp.Range); err != nil {
			return nil, err
		}
		b, err := NewBuilder(sp.Range, sp.Depth)
		if err != nil {
			return nil, err
		}
		builders[i] = b
	}
	want := func(t token.Token) bool {
		for _, sp := range specs {
			if sp.Range.Contains(t) {
				return true
			}
		}
		return false
	}
	err := Walk(ctx, tables, want, func(p *Partition) error {
		for i, sp := range specs {
			if sp.Range.Contains(p.Token) {
				if err := builders[i].Add(p.Token, p.Hash); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make([]*Tree, len(builders))
	for i, b := range builders {
		out[i] = b.Tree()
	}
	return out, nil
}
