package token

import (
	"encoding/binary"
	"errors"
	"math"
)

// ErrNoKey is returned by KeyBelow when no key of the length asked for sorts below the limit
// within the search budget.
var ErrNoKey = errors.New("no key of that length sorts below the limit")

// KeyBelow returns a partition key of exactly n bytes whose decorated key sorts strictly
// before (limit, limitKey), trying the candidates numbered from, from+1, ... (at most budget
// of them) and returning the number after the one it took, so that successive calls give
// distinct keys. A candidate is n-8 zero bytes followed by its number (or the number's low n
// bytes when n < 8).
//
// Under Murmur3 the chance that a candidate qualifies is the fraction of the ring below the
// limit, so the state of the zero prefix is hashed once and each candidate costs one block
// and the finalisation whatever n is. The empty key (n = 0) is the minimum token, below every
// real key.
func KeyBelow(p Partitioner, n int, limit Token, limitKey []byte, from uint64, budget int) ([]byte, uint64, error) {
	if n < 0 || n > math.MaxUint16 {
		return nil, from, errors.New("token: key length out of range")
	}
	key := make([]byte, n)
	if n == 0 {
		if CompareKeys(p.Token(key), key, limit, limitKey) < 0 {
			return key, from, nil
		}
		return nil, from, ErrNoKey
	}
	counter := key[max(0, n-8):]
	if n < 8 {
		budget = min(budget, 1<<(8*n))
	}
	_, murmur := p.(murmur3)
	// The zero prefix's whole blocks, hashed once: candidates differ only after them.
	fixed := (n - len(counter)) / 16 * 16
	h1, h2 := murmurBlocks(0, 0, key[:fixed])
	var buf [8]byte
	for i := 0; i < budget; i++ {
		c := from + uint64(i)
		binary.BigEndian.PutUint64(buf[:], c)
		copy(counter, buf[8-len(counter):])
		var t Token
		if murmur {
			rest := key[fixed:]
			nb := len(rest) / 16 * 16
			a, b := murmurBlocks(h1, h2, rest[:nb])
			h0, _ := murmurFinish(a, b, rest[nb:], n)
			v := int64(h0)
			if v == math.MinInt64 {
				v = math.MaxInt64
			}
			t = Token{Kind: KindMurmur3, Long: v}
		} else {
			t = p.Token(key)
		}
		if CompareKeys(t, key, limit, limitKey) < 0 {
			return key, c + 1, nil
		}
		if !murmur && i == 0 && c == 0 {
			// Byte-ordered: the all-zero candidate is the smallest key of this length; if it
			// does not sort below the limit, none does.
			break
		}
	}
	return nil, from + uint64(budget), ErrNoKey
}
