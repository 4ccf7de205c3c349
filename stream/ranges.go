package stream

import (
	"encoding/binary"
	"fmt"

	"github.com/sluicedb/sluice/sstable/token"
	"github.com/sluicedb/sluice/wire"
)

// EncodeRanges turns a range set into its wire form: Murmur3 tokens as the 8 big-endian
// bytes of the int64, ByteOrdered tokens as the key bytes, the minimum token as no bytes.
func EncodeRanges(rs token.RangeSet) []wire.TokenRange {
	out := make([]wire.TokenRange, len(rs))
	for i, r := range rs {
		out[i] = wire.TokenRange{Left: encodeToken(r.Left), Right: encodeToken(r.Right)}
	}
	return out
}

func encodeToken(t token.Token) []byte {
	if t.Kind == token.KindMurmur3 {
		if t.Equal(token.Murmur3.MinToken()) {
			return nil
		}
		return binary.BigEndian.AppendUint64(nil, uint64(t.Long))
	}
	return append([]byte(nil), t.Bytes...)
}

// DecodeRanges is EncodeRanges' inverse for partitioner p. It rejects a Murmur3 token
// that is not 8 bytes.
func DecodeRanges(p token.Partitioner, trs []wire.TokenRange) (token.RangeSet, error) {
	out := make(token.RangeSet, len(trs))
	for i, tr := range trs {
		l, err := decodeToken(p, tr.Left)
		if err != nil {
			return nil, fmt.Errorf("range %d left: %w", i, err)
		}
		r, err := decodeToken(p, tr.Right)
		if err != nil {
			return nil, fmt.Errorf("range %d right: %w", i, err)
		}
		out[i] = token.Range{Left: l, Right: r}
	}
	return out, nil
}

func decodeToken(p token.Partitioner, b []byte) (token.Token, error) {
	if len(b) == 0 {
		return p.MinToken(), nil
	}
	min := p.MinToken()
	if min.Kind == token.KindMurmur3 {
		if len(b) != 8 {
			return token.Token{}, fmt.Errorf("%w: a Murmur3 token of %d bytes", ErrProtocol, len(b))
		}
		return token.Token{Kind: token.KindMurmur3, Long: int64(binary.BigEndian.Uint64(b))}, nil
	}
	return token.Token{Kind: min.Kind, Bytes: append([]byte(nil), b...)}, nil
}
