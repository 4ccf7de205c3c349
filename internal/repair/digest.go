package repair

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/cespare/xxhash/v2"

	"github.com/sluicedb/sluice/sstable"
	"github.com/sluicedb/sluice/sstable/token"
)

// Digest is one partition in a repair's second exchange: after the Merkle trees have found the
// leaves that differ, the replicas trade one Digest per partition of those leaves, so that only
// the partitions that differ move, and only towards the side that lacks something.
//
// Copies lets a side tell that its content already holds the other's: when every copy the
// other side holds (each sstable's copy reconciled on its own) is also among its own copies,
// its reconciliation includes everything the other's does, so nothing needs to go its way.
// Replicas that received the same flushes or streamed copies hold byte-identical copies, which
// hash equal; copies that differ (different compactions) make the test fail safe: both ways.
type Digest struct {
	Token  int64    // Murmur3
	Key    uint64   // xxhash64 of the partition key
	Hash   uint64   // reconciled content of all copies
	Copies []uint64 // reconciled content of each copy alone, sorted, no repeats
}

// KeyHash is the hash Digest.Key holds: partitions are matched across replicas by token and
// key hash, which keeps the exchange small whatever the keys' length.
func KeyHash(key []byte) uint64 { return xxhash.Sum64(key) }

// Digest page limits: a page stops at MaxDigestsPerPage partitions or MaxDigestBytes encoded,
// at the end of a token (partitions sharing a token stay on one page, so the next page starts
// after a token). MaxDigestBytes holds a full page of digests of up to 4 copies each; a page
// of partitions with more copies stops earlier, and the caller asks for the next one.
const (
	MaxDigestsPerPage = 1 << 16
	MaxDigestBytes    = 4 << 20
	// maxCopies bounds one partition's copies on the wire: more sstables than this holding one
	// partition is not a table a node serves.
	maxCopies = 1 << 12
	// maxSameToken bounds the partitions one page may hold under one token (a Murmur3
	// collision); more is a hostile peer.
	maxSameToken = 64
)

// maxDigestSize is the largest encoding of one digest ParseDigests accepts.
const maxDigestSize = 24 + binary.MaxVarintLen64 + 8*maxCopies

// DigestPageSize bounds the encoding (AppendDigests) of a page Digests returns for limit
// (MaxDigestsPerPage when it is not positive or larger) from a table an honest replica holds:
// the page stops before a new token once it holds limit digests or MaxDigestBytes, so past
// either it holds only the partitions of its last token, at most maxSameToken of them (as
// ParseDigests accepts). A peer call's answer is sized from it before the page is read.
func DigestPageSize(limit int) int {
	if limit <= 0 || limit > MaxDigestsPerPage {
		limit = MaxDigestsPerPage
	}
	return min((limit+maxSameToken)*maxDigestSize, MaxDigestBytes+maxSameToken*maxDigestSize)
}

// encodedSize is a digest's size in AppendDigests' encoding.
func (d *Digest) encodedSize() int { return 24 + binary.MaxVarintLen64 + 8*len(d.Copies) }

// Digests returns the digests of the tables' partitions in rs (normalized: no range wraps
// except to the end of the ring) whose tokens are greater than *after (all of them when after
// is nil), in token order, stopping at the end of a token once a page is full (see
// MaxDigestsPerPage); more reports that partitions remain past the last one returned. A limit
// of 0 or less means no page limit.
func Digests(ctx context.Context, tables []*sstable.Table, rs token.RangeSet, after *int64, limit int) (out []Digest, more bool, err error) {
	for _, r := range rs {
		if err := checkRange(r); err != nil {
			return nil, false, err
		}
	}
	want := func(t token.Token) bool {
		return rs.Contains(t) && (after == nil || t.Long > *after)
	}
	size := 0
	errFull := errors.New("page full")
	err = walk(ctx, tables, want, true, func(p *Partition) error {
		if n := len(out); limit > 0 && n > 0 && (n >= limit || size >= MaxDigestBytes) && out[n-1].Token != p.Token.Long {
			more = true
			return errFull
		}
		d := Digest{Token: p.Token.Long, Key: KeyHash(p.Key), Hash: p.Hash, Copies: slices.Clone(p.Copies)}
		size += d.encodedSize()
		out = append(out, d)
		return nil
	})
	if errors.Is(err, errFull) {
		err = nil
	}
	return out, more, err
}

// DigestsSize bounds the bytes AppendDigests appends for ds: a buffer of this capacity takes
// the encoding without growing.
func DigestsSize(ds []Digest) int {
	n := 0
	for i := range ds {
		n += ds[i].encodedSize()
	}
	return n
}

// AppendDigests appends the encoding of ds to dst: per digest the token, key hash and hash
// (little-endian), the copy count (uvarint) and the copies.
func AppendDigests(dst []byte, ds []Digest) []byte {
	for _, d := range ds {
		dst = binary.LittleEndian.AppendUint64(dst, uint64(d.Token))
		dst = binary.LittleEndian.AppendUint64(dst, d.Key)
		dst = binary.LittleEndian.AppendUint64(dst, d.Hash)
		dst = binary.AppendUvarint(dst, uint64(len(d.Copies)))
		for _, c := range d.Copies {
			dst = binary.LittleEndian.AppendUint64(dst, c)
		}
	}
	return dst
}

// ErrBadDigests reports a digest page that cannot come from an honest replica: truncated,
// longer than asked, out of token order, outside the ranges asked for, a partition twice, or
// copies that are not sorted and distinct.
var ErrBadDigests = errors.New("repair: bad digests")

// ParseDigests decodes a page of at most maxCount digests (plus the rest of its last token)
// and checks it against the request: every token in rs and greater than *after (when set), in
// order, each partition once, each with 1 to maxCopies sorted distinct copies.
func ParseDigests(b []byte, rs token.RangeSet, after *int64, maxCount int) ([]Digest, error) {
	var out []Digest
	sameToken := 0
	for len(b) > 0 {
		if len(b) < 24 {
			return nil, fmt.Errorf("%w: %d bytes left, a digest takes at least 25", ErrBadDigests, len(b))
		}
		d := Digest{Token: int64(binary.LittleEndian.Uint64(b)), Key: binary.LittleEndian.Uint64(b[8:]),
			Hash: binary.LittleEndian.Uint64(b[16:])}
		n, k := binary.Uvarint(b[24:])
		if k <= 0 || n == 0 || n > maxCopies || uint64(len(b)-24-k) < 8*n {
			return nil, fmt.Errorf("%w: digest %d: copy count %d with %d bytes left", ErrBadDigests, len(out), n, len(b)-24)
		}
		b = b[24+k:]
		d.Copies = make([]uint64, n)
		for i := range d.Copies {
			d.Copies[i] = binary.LittleEndian.Uint64(b[8*i:])
			if i > 0 && d.Copies[i] <= d.Copies[i-1] {
				return nil, fmt.Errorf("%w: digest %d: copies not sorted and distinct", ErrBadDigests, len(out))
			}
		}
		b = b[8*n:]
		tok := token.Token{Kind: token.KindMurmur3, Long: d.Token}
		if !rs.Contains(tok) || (after != nil && d.Token <= *after) || d.Token == math.MinInt64 {
			return nil, fmt.Errorf("%w: token %d outside the ranges asked for", ErrBadDigests, d.Token)
		}
		if len(out) > 0 {
			prev := out[len(out)-1].Token
			switch {
			case d.Token < prev:
				return nil, fmt.Errorf("%w: token %d after %d", ErrBadDigests, d.Token, prev)
			case d.Token > prev:
				if len(out) >= maxCount {
					return nil, fmt.Errorf("%w: more than %d digests", ErrBadDigests, maxCount)
				}
				sameToken = 0
			default:
				sameToken++
				if sameToken >= maxSameToken {
					return nil, fmt.Errorf("%w: more than %d partitions of token %d", ErrBadDigests, maxSameToken, d.Token)
				}
				for _, o := range out[len(out)-sameToken:] {
					if o.Key == d.Key {
						return nil, fmt.Errorf("%w: partition of token %d twice", ErrBadDigests, d.Token)
					}
				}
			}
		} else if maxCount < 1 {
			return nil, fmt.Errorf("%w: more than %d digests", ErrBadDigests, maxCount)
		}
		out = append(out, d)
	}
	return out, nil
}
