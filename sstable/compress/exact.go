package compress

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"

	"github.com/pierrec/lz4/v4"
)

// Exact-length chunk records.
//
// A chunk's compressed length is implied by the next chunk's offset, so a chunk re-encoded in a
// child (an edge chunk of a zero-copy slice, holding live bytes and filler partitions) moves
// every chunk after it by the difference. To keep later chunks where a clone needs them
// (their file offset congruent to the parent's modulo the block size), the re-encoded record is
// grown to the byte: an LZ4 block gives up some of its matches, the bytes they copied written
// as literals instead (the same content, a longer encoding). Nothing else in a chunk may be
// padded: Cassandra's LZ4Compressor refuses a block that does not end where the chunk does.

// ErrNoExactLength reports a record that cannot be grown to the length asked for.
var ErrNoExactLength = errors.New("no encoding of that exact length")

// GrowRecord re-encodes chunk (its uncompressed bytes) as a record (body and CRC) exactly
// len(rec)+by bytes long, rec being its record as codec made it. Only LZ4 records grow; a raw
// record (stored uncompressed) does not, and no record grows to rawAt (the parent's
// maxCompressedLength), where readers take a body for raw bytes.
func GrowRecord(codec Codec, chunk, rec []byte, by, rawAt int) ([]byte, error) {
	if by == 0 {
		return rec, nil
	}
	if _, ok := codec.(*lz4Codec); !ok || len(rec) < 8 || by < 0 || len(rec)-CRCLength+by >= rawAt {
		return nil, ErrNoExactLength
	}
	body := rec[:len(rec)-CRCLength]
	if int(binary.LittleEndian.Uint32(body)) != len(chunk) || len(body)-4 >= len(chunk) {
		return nil, ErrNoExactLength // a raw record, or not this chunk's
	}
	block, err := growLZ4(body[4:], len(body)-4+by, chunk)
	if err != nil {
		return nil, err
	}
	out := binary.LittleEndian.AppendUint32(make([]byte, 0, 4+len(block)+CRCLength), uint32(len(chunk)))
	out = append(out, block...)
	return binary.BigEndian.AppendUint32(out, crc32.ChecksumIEEE(out)), nil
}

// seq is one LZ4 sequence: lits literal bytes, then a match of mlen bytes (0: the last
// sequence, literals only) at offset back.
type seq struct {
	lits   []byte
	mlen   int
	offset int
}

// parseLZ4 splits an LZ4 block into its sequences.
func parseLZ4(b []byte) ([]seq, bool) {
	var out []seq
	i := 0
	// length reads a length field whose token nibble is n: 15 continues in bytes of 255.
	length := func(n int) (int, bool) {
		if n < 15 {
			return n, true
		}
		for i < len(b) {
			c := b[i]
			i++
			n += int(c)
			if c != 255 {
				return n, true
			}
		}
		return 0, false
	}
	for i < len(b) {
		tok := b[i]
		i++
		ll, ok := length(int(tok >> 4))
		if !ok || i+ll > len(b) {
			return nil, false
		}
		s := seq{lits: b[i : i+ll]}
		i += ll
		if i == len(b) {
			return append(out, s), true
		}
		if i+2 > len(b) {
			return nil, false
		}
		s.offset = int(binary.LittleEndian.Uint16(b[i:]))
		i += 2
		ml, ok := length(int(tok & 15))
		if !ok {
			return nil, false
		}
		s.mlen = ml + 4
		out = append(out, s)
	}
	return out, false
}

// extLen is the count of length bytes after the token for a length field of n (15 and over).
func extLen(n int) int {
	if n < 15 {
		return 0
	}
	return 1 + (n-15)/255
}

// seqSize is the encoded size of sequence s with ll literals and a match of ml bytes.
func seqSize(ll, ml int) int {
	n := 1 + extLen(ll) + ll
	if ml > 0 {
		n += 2 + extLen(ml-4)
	}
	return n
}

// encodeLZ4 writes sequences back as a block; content resolves the literals of sequences
// whose literals were extended into what their match had copied.
func encodeLZ4(ss []seq) []byte {
	var out []byte
	putLen := func(n int) {
		for n >= 255 {
			out = append(out, 255)
			n -= 255
		}
		out = append(out, byte(n))
	}
	for _, s := range ss {
		ll, ml := len(s.lits), s.mlen
		tok := byte(min(ll, 15)) << 4
		if ml > 0 {
			tok |= byte(min(ml-4, 15))
		}
		out = append(out, tok)
		if ll >= 15 {
			putLen(ll - 15)
		}
		out = append(out, s.lits...)
		if ml > 0 {
			out = binary.LittleEndian.AppendUint16(out, uint16(s.offset))
			if ml-4 >= 15 {
				putLen(ml - 4 - 15)
			}
		}
	}
	return out
}

// growLZ4 re-encodes block (which decodes to content) as a block of exactly size bytes, by
// turning the tails of matches, then whole short matches, into literals.
func growLZ4(block []byte, size int, content []byte) ([]byte, error) {
	ss, ok := parseLZ4(block)
	if !ok || len(ss) == 0 {
		return nil, ErrNoExactLength
	}
	// Literal bytes come from the content: sequence i starts at pos[i].
	pos := make([]int, len(ss))
	at := 0
	for i, s := range ss {
		pos[i] = at
		at += len(s.lits) + s.mlen
	}
	if at != len(content) {
		return nil, ErrNoExactLength
	}
	cur := len(block)
	need := size - cur
	// literalize moves k bytes from the end of match i into the literals of sequence i+1.
	literalize := func(i, k int) {
		s, n := &ss[i], &ss[i+1]
		s.mlen -= k
		start := pos[i+1] - k
		n.lits = content[start : pos[i+1]+len(n.lits)]
		pos[i+1] = start
	}
	gain := func(i, k int) int {
		s, n := ss[i], ss[i+1]
		return seqSize(len(s.lits), s.mlen-k) + seqSize(len(n.lits)+k, n.mlen) - seqSize(len(s.lits), s.mlen) - seqSize(len(n.lits), n.mlen)
	}
	for i := 0; i+1 < len(ss) && need > 0; i++ {
		if ss[i].mlen <= 4 {
			continue
		}
		maxK := ss[i].mlen - 4
		if g := gain(i, maxK); g <= need {
			literalize(i, maxK)
			need -= g
			continue
		}
		// The largest k whose gain does not pass what is needed (gains step by 0, 1 or 2).
		best := 0
		for k := 1; k <= maxK; k++ {
			if g := gain(i, k); g <= need {
				best = k
				if g == need {
					break
				}
			} else {
				break
			}
		}
		if best > 0 {
			need -= gain(i, best)
			literalize(i, best)
		}
	}
	// Whole matches of 4 bytes become literals: about one byte each. One pass: a sequence that
	// gives up its match joins the next one, which may give up its own in turn.
	if need > 0 {
		kept := make([]seq, 0, len(ss))
		for i := range ss {
			s := ss[i]
			if need > 0 && s.mlen == 4 && i+1 < len(ss) {
				n := ss[i+1]
				g := seqSize(len(s.lits)+4+len(n.lits), n.mlen) - seqSize(len(s.lits), s.mlen) - seqSize(len(n.lits), n.mlen)
				if g > 0 && g <= need {
					ss[i+1] = seq{lits: content[pos[i] : pos[i+1]+len(n.lits)], mlen: n.mlen, offset: n.offset}
					pos[i+1] = pos[i]
					need -= g
					continue
				}
			}
			kept = append(kept, s)
		}
		ss = kept
	}
	if need != 0 {
		return nil, ErrNoExactLength
	}
	out := encodeLZ4(ss)
	if len(out) != size {
		return nil, ErrNoExactLength
	}
	// The new encoding must decode to the same content.
	check := make([]byte, len(content))
	if n, err := lz4.UncompressBlock(out, check); err != nil || n != len(content) || !bytes.Equal(check, content) {
		return nil, ErrNoExactLength
	}
	return out, nil
}
