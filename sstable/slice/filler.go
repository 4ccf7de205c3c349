package slice

import (
	"bytes"
	"errors"
	"fmt"
	"github.com/sluicedb/sluice/sstable"
	"math"
	"sort"
	"unicode/utf8"

	"github.com/sluicedb/sluice/sstable/rows"
	"github.com/sluicedb/sluice/sstable/schema"
	"github.com/sluicedb/sluice/sstable/token"
	"github.com/sluicedb/sluice/sstable/version"
)

// Filler partitions: what a child's filler regions (fill.go) hold.
//
// A filler partition is a key, the LIVE deletion, the empty static row where the table has
// statics, and the end-of-partition flag: nothing. Compaction and repair validation drop it
// (an empty partition is never written, and validation hashes what compaction keeps), reads
// return nothing for it, and the rebuilt index addresses it like any partition, so Cassandra's
// sequential readers and its verifier walk the child from byte 0 to its end.
//
// Its key is made to measure: its length sizes the partition to the byte, and its token is
// chosen, not searched for: the Murmur3 token of a key is solved for one free 16-byte block
// (token.SolveKey), so every filler before a run gets the token just below the run's first
// partition (or that very token with a smaller key when nothing lies between it and the
// range's left end), inside the child's own ranges, as `nodetool import`'s token check wants.
// Keys must also be valid for the partition key type, so only types whose keys can have any
// length and ASCII bytes are filled (text, ascii, blob); a child of another key type is laid
// out with its runs re-encoded (planFill with no filler).

// minFillerKey is the shortest filler key: one solved Murmur3 block.
const minFillerKey = 16

// fillerSolveBudget bounds the candidates tried for one filler key: an ASCII block is one
// candidate in 2^16.
const fillerSolveBudget = 1 << 24

// errNoFiller reports a filler region that could not be made.
var errNoFiller = errors.New("no filler partition fits")

// fillerKey is one filler partition of a region: its key, token and offset in the region.
type fillerKey struct {
	Key []byte
	Tok token.Token
	Off int64
}

// fillerMaker makes the filler regions of one parent's children. Keys of a type that takes any
// length size an empty partition (key mode); otherwise a key of the type's own shape is searched
// for a token in the window, and one expired cell of a padding column sizes the partition (cell
// mode, cellFiller).
type fillerMaker struct {
	w     *rows.Writer
	t     *schema.Table
	p     token.Partitioner
	valid func([]byte) bool // key mode: what a key must pass
	over  int64             // key mode: an empty partition's bytes besides its key
	seed  uint64
	// cell mode
	cell   *cellShape
	minCel int64 // the smallest cell-mode filler partition
}

// newFillerMaker returns the maker for t's partitions, or nil with the reason none can be made.
func newFillerMaker(t *schema.Table, v version.Version, p token.Partitioner) (*fillerMaker, string) {
	m := &fillerMaker{w: rows.NewWriter(t, v), t: t, p: p}
	if m.valid = keyValidator(t.Key); m.valid != nil {
		switch p.Name() {
		case token.Murmur3Name, token.ByteOrderedName:
		default:
			return nil, "no filler partition under " + p.Name()
		}
		over, err := sstable.EmptyOverhead(t, v)
		if err != nil {
			return nil, err.Error()
		}
		m.over = over
		return m, ""
	}
	if p.Name() != token.Murmur3Name {
		return nil, fmt.Sprintf("no filler partition for partition keys of type %s under %s", t.Key, p.Name())
	}
	shape, why := newCellShape(t)
	if shape == nil {
		return nil, fmt.Sprintf("no filler partition for partition keys of type %s: %s", t.Key, why)
	}
	m.cell = shape
	b, err := m.cellPartition(shape.keyTemplate(0), 0, shape.ttls[0])
	if err != nil {
		return nil, err.Error()
	}
	m.minCel = int64(len(b))
	return m, ""
}

// keyValidator is the check a filler key must pass to be a value of type k, or nil for a type
// whose values cannot take any length.
func keyValidator(k *schema.Type) func([]byte) bool {
	if k == nil || k.Kind != schema.KindScalar {
		return nil
	}
	switch k.ShortName() {
	case "UTF8Type":
		return utf8.Valid
	case "AsciiType":
		return func(b []byte) bool {
			for _, c := range b {
				if c >= 0x80 {
					return false
				}
			}
			return true
		}
	case "BytesType":
		return func([]byte) bool { return true }
	}
	return nil
}

// minRegion is the smallest filler region m makes (0 for a nil maker: none).
func (m *fillerMaker) minRegion() int64 {
	switch {
	case m == nil:
		return 0
	case m.cell != nil:
		return m.minCel
	}
	return m.over + minFillerKey
}

// region returns size bytes of filler partitions whose decorated keys sort after everything at
// or below lower (exclusive: the left end of the range the next run lies in) and before the
// run's first partition (tok, key), with their keys and offsets.
func (m *fillerMaker) region(size int64, lower, tok token.Token, key []byte) ([]byte, []fillerKey, error) {
	if size < m.minRegion() {
		return nil, nil, fmt.Errorf("%w: a %d-byte region, the smallest filler takes %d", errNoFiller, size, m.minRegion())
	}
	if m.cell != nil {
		return m.cellRegion(size, lower, tok, key)
	}
	per := m.over + math.MaxUint16
	n := (size + per - 1) / per
	keyBytes := size - n*m.over
	keys := make([]fillerKey, n)
	for i := range keys {
		length := keyBytes / n
		if int64(i) < keyBytes%n {
			length++
		}
		k, t, err := m.key(int(length), int64(i), lower, tok, key)
		if err != nil {
			return nil, nil, err
		}
		keys[i] = fillerKey{Key: k, Tok: t}
	}
	sort.Slice(keys, func(a, b int) bool {
		return token.CompareKeys(keys[a].Tok, keys[a].Key, keys[b].Tok, keys[b].Key) < 0
	})
	out := make([]byte, 0, size)
	for i := range keys {
		keys[i].Off = int64(len(out))
		var err error
		if out, err = sstable.EmptyPartition(m.w, out, keys[i].Key); err != nil {
			return nil, nil, err
		}
	}
	if int64(len(out)) != size {
		return nil, nil, fmt.Errorf("slice: filler region of %d bytes for %d", len(out), size)
	}
	return out, keys, nil
}

// key makes the i-th filler key of n bytes before (tok, first) and above lower.
func (m *fillerMaker) key(n int, i int64, lower, tok token.Token, first []byte) ([]byte, token.Token, error) {
	k := make([]byte, n)
	if tok.Kind == token.KindMurmur3 {
		target, same := tok.Long-1, false
		if target <= lower.Long || target == math.MinInt64 {
			// Nothing lies between the range's left end and the run: the run's own token,
			// with a key that sorts first (zero bytes lead it).
			target, same = tok.Long, true
		}
		at := (n/16 - 1) * 16
		accept := func(b []byte) bool {
			return m.valid(b) && (!same || bytes.Compare(b, first) < 0)
		}
		if !token.SolveKeyASCII(k, at, target, &m.seed, fillerSolveBudget, accept) {
			return nil, token.Token{}, fmt.Errorf("%w: no %d-byte key for token %d", errNoFiller, n, target)
		}
		return k, m.p.Token(k), nil
	}
	// Byte-ordered: the key is the token. The range's left end, zeros, and a counter sort above
	// the left end and below a first key that does not start with them.
	lo := lower.Bytes
	if n < len(lo)+5 {
		return nil, token.Token{}, fmt.Errorf("%w: a %d-byte key cannot follow the %d-byte range start", errNoFiller, n, len(lo))
	}
	copy(k, lo)
	c := fmt.Sprintf("%04d", i%10000)
	copy(k[n-4:], c)
	t := m.p.Token(k)
	if !m.valid(k) || token.CompareKeys(t, k, tok, first) >= 0 || t.Compare(lower) <= 0 {
		return nil, token.Token{}, fmt.Errorf("%w: no %d-byte key between %x and %x", errNoFiller, n, lo, first)
	}
	return k, t, nil
}
