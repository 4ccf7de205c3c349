package token

import (
	"bytes"
	"errors"
	"math"
	"testing"
)

// KeyBelow's incremental hashing must agree with the partitioner's own Token for every key
// length: whole blocks before the counter, a block holding part of it, tails of every size.
func TestKeyBelowFindsKeysThatSortBelowTheLimit(t *testing.T) {
	limit := Token{Kind: KindMurmur3, Long: math.MinInt64 / 2} // a quarter of the ring lies below
	limitKey := []byte("k")
	for _, n := range []int{0, 1, 3, 7, 8, 9, 15, 16, 17, 23, 24, 31, 32, 33, 100, 4095, 65535} {
		from := uint64(0)
		var prev []byte
		for range 3 {
			key, next, err := KeyBelow(Murmur3, n, limit, limitKey, from, 1<<16)
			if n == 0 && prev != nil {
				break // one empty key only
			}
			if err != nil {
				t.Fatalf("n=%d: %v", n, err)
			}
			if len(key) != n {
				t.Fatalf("n=%d: key of %d bytes", n, len(key))
			}
			if tok := Murmur3.Token(key); CompareKeys(tok, key, limit, limitKey) >= 0 {
				t.Fatalf("n=%d: key token %v does not sort below %v", n, tok, limit)
			}
			if prev != nil && bytes.Equal(prev, key) {
				t.Fatalf("n=%d: successive calls returned the same key", n)
			}
			prev, from = key, next
		}
	}
}

func TestKeyBelowGivesUpWithinItsBudget(t *testing.T) {
	// Nothing sorts below the minimum token but the empty key.
	if _, _, err := KeyBelow(Murmur3, 20, Murmur3.MinToken(), nil, 0, 1000); !errors.Is(err, ErrNoKey) {
		t.Fatalf("err = %v, want ErrNoKey", err)
	}
	// Byte-ordered: no 3-byte key sorts below 00 00, and one below 00 01 is found at once.
	if _, _, err := KeyBelow(ByteOrdered, 3, ByteOrdered.Token([]byte{0, 0}), []byte{0, 0}, 0, 1<<20); !errors.Is(err, ErrNoKey) {
		t.Fatalf("err = %v, want ErrNoKey", err)
	}
	key, _, err := KeyBelow(ByteOrdered, 3, ByteOrdered.Token([]byte{0, 1}), []byte{0, 1}, 0, 10)
	if err != nil || !bytes.Equal(key, []byte{0, 0, 0}) {
		t.Fatalf("key %x, err %v", key, err)
	}
}
