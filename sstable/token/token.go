package token

import (
	"bytes"
	"cmp"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"strconv"
)

// Kind says which partitioner a Token belongs to.
type Kind uint8

const (
	KindMurmur3 Kind = iota + 1
	KindBytes
)

// Token is a partitioner token. A Murmur3 token is a signed int64 (Long); a ByteOrdered token is
// the raw key bytes (Bytes, which may alias the key it came from). The zero Token is invalid.
// Tokens are small values: computing one allocates nothing.
type Token struct {
	Kind  Kind
	Long  int64
	Bytes []byte
}

// Compare orders tokens of one partitioner: Murmur3 as signed int64, ByteOrdered as unsigned
// lexicographic bytes.
func (t Token) Compare(o Token) int {
	if t.Kind == KindMurmur3 {
		return cmp.Compare(t.Long, o.Long)
	}
	return bytes.Compare(t.Bytes, o.Bytes)
}

func (t Token) Equal(o Token) bool { return t.Compare(o) == 0 }

// String prints a Murmur3 token as a decimal and a ByteOrdered token as lower-case hex.
func (t Token) String() string {
	switch t.Kind {
	case KindMurmur3:
		return strconv.FormatInt(t.Long, 10)
	case KindBytes:
		return hex.EncodeToString(t.Bytes)
	}
	return "<invalid token>"
}

// Partitioner maps partition keys to tokens.
type Partitioner interface {
	// Name is the Cassandra class name stored in Statistics.db.
	Name() string
	Token(key []byte) Token
	MinToken() Token
	// ParseToken reads the String form of a token.
	ParseToken(s string) (Token, error)
}

var ErrUnknownPartitioner = errors.New("unknown partitioner")

const (
	Murmur3Name      = "org.apache.cassandra.dht.Murmur3Partitioner"
	ByteOrderedName  = "org.apache.cassandra.dht.ByteOrderedPartitioner"
	partitionerShort = "org.apache.cassandra.dht."
)

// ForName returns the partitioner for a class name (full, or short like "Murmur3Partitioner").
func ForName(name string) (Partitioner, error) {
	switch name {
	case Murmur3Name, "Murmur3Partitioner":
		return Murmur3, nil
	case ByteOrderedName, "ByteOrderedPartitioner":
		return ByteOrdered, nil
	}
	return nil, fmt.Errorf("%w: %q (supported: Murmur3Partitioner, ByteOrderedPartitioner)", ErrUnknownPartitioner, name)
}

// Murmur3 is Cassandra's default partitioner.
var Murmur3 Partitioner = murmur3{}

// ByteOrdered orders partitions by raw key bytes.
var ByteOrdered Partitioner = byteOrdered{}

type murmur3 struct{}

func (murmur3) Name() string { return Murmur3Name }

// Token: an empty key is the minimum token; a hash equal to Long.MIN_VALUE is normalised to
// Long.MAX_VALUE so that no key ever maps to the minimum.
func (murmur3) Token(key []byte) Token {
	if len(key) == 0 {
		return Token{Kind: KindMurmur3, Long: math.MinInt64}
	}
	h0, _ := Hash3x64_128(key, 0)
	v := int64(h0)
	if v == math.MinInt64 {
		v = math.MaxInt64
	}
	return Token{Kind: KindMurmur3, Long: v}
}

// TokenAndHash is p.Token(key) and, under Murmur3, the key's Murmur3 x64-128 hash (seed 0)
// it came from, with ok: the hash the bloom filter takes too (Cassandra's filter and
// partitioner share it), so a pass that needs both hashes each key once.
func TokenAndHash(p Partitioner, key []byte) (t Token, h [2]uint64, ok bool) {
	if _, m := p.(murmur3); !m || len(key) == 0 {
		return p.Token(key), h, false
	}
	h[0], h[1] = Hash3x64_128(key, 0)
	v := int64(h[0])
	if v == math.MinInt64 {
		v = math.MaxInt64
	}
	return Token{Kind: KindMurmur3, Long: v}, h, true
}

func (murmur3) MinToken() Token { return Token{Kind: KindMurmur3, Long: math.MinInt64} }

func (murmur3) ParseToken(s string) (Token, error) {
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return Token{}, fmt.Errorf("murmur3 token %q: %w", s, err)
	}
	return Token{Kind: KindMurmur3, Long: v}, nil
}

type byteOrdered struct{}

func (byteOrdered) Name() string { return ByteOrderedName }

func (byteOrdered) Token(key []byte) Token { return Token{Kind: KindBytes, Bytes: key} }

func (byteOrdered) MinToken() Token { return Token{Kind: KindBytes, Bytes: []byte{}} }

func (byteOrdered) ParseToken(s string) (Token, error) {
	b, err := hex.DecodeString(s)
	if err != nil {
		return Token{}, fmt.Errorf("byte-ordered token %q: %w", s, err)
	}
	return Token{Kind: KindBytes, Bytes: b}, nil
}

// CompareKeys orders decorated keys as Cassandra does: by token, then by raw key bytes.
func CompareKeys(ta Token, ka []byte, tb Token, kb []byte) int {
	if c := ta.Compare(tb); c != 0 {
		return c
	}
	return bytes.Compare(ka, kb)
}
