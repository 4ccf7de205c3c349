package gossip

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/sluicedb/sluice/membership/gossip/claim"
)

func sortedTokens(rng *rand.Rand, n int) []int64 {
	seen := make(map[int64]bool, n)
	out := make([]int64, 0, n)
	for len(out) < n {
		v := rng.Int64() - rng.Int64()
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	slices.Sort(out)
	return out
}

func TestStateRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var in [][]byte
	in = append(in, appendChunks("a", tokenSet{version: 1, tokens: sortedTokens(rng, 256)})...)
	in = append(in, appendChunks("b", tokenSet{version: 1 << 62, tokens: []int64{}})...)
	b := appendState(nil, in)
	out, err := decodeState(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != len(in) {
		t.Fatalf("%d messages, want %d", len(out), len(in))
	}
	for i := range in {
		if !slices.Equal(out[i], in[i]) {
			t.Fatalf("message %d differs", i)
		}
	}
	// The result must not alias the input buffer.
	clear(b)
	if !slices.Equal(out[0], in[0]) {
		t.Fatal("decoded state aliases its input")
	}
}

func TestStateDecodeRejectsEveryTruncation(t *testing.T) {
	b := appendState(nil, appendChunks("n1", tokenSet{version: 9, tokens: []int64{1, 2, 3}}))
	for i := range len(b) {
		if _, err := decodeState(b[:i]); !errors.Is(err, ErrMalformed) {
			t.Fatalf("prefix of %d bytes: err = %v", i, err)
		}
	}
}

func TestStateDecodeRejectsLiesAboutLengths(t *testing.T) {
	for name, b := range map[string][]byte{
		"huge message count": {stateFormat, 0xff, 0xff, 0xff, 0xff, 0x0f},
		"oversized message":  appendState(nil, [][]byte{make([]byte, maxChunkBytes+1)}),
		"other format":       {stateFormat + 1, 0},
	} {
		if _, err := decodeState(b); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: err = %v", name, err)
		}
	}
}

func TestChunksFitAGossipPacketAndReassemble(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	name := string(make([]byte, maxNameLen))
	for _, n := range []int{0, 1, tokensPerChunk, tokensPerChunk + 1, 256, 1536} {
		set := tokenSet{version: uint64(n) + 1, tokens: sortedTokens(rng, n)}
		msgs := appendChunks(name, set)
		if want := max(1, (n+tokensPerChunk-1)/tokensPerChunk); len(msgs) != want {
			t.Fatalf("%d tokens: %d chunks, want %d", n, len(msgs), want)
		}
		var got []int64
		for _, m := range msgs {
			if len(m) > maxChunkBytes {
				t.Fatalf("%d tokens: chunk of %d bytes exceeds %d", n, len(m), maxChunkBytes)
			}
			c, err := decodeChunkMsg(m)
			if err != nil {
				t.Fatal(err)
			}
			if c.name != name || c.version != set.version || c.total != n || c.offset != len(got) {
				t.Fatalf("chunk header %q v%d %d@%d", c.name, c.version, c.total, c.offset)
			}
			got = append(got, c.tokens...)
		}
		if !slices.Equal(got, set.tokens) {
			t.Fatalf("%d tokens: reassembled set differs", n)
		}
	}
}

func TestChunkDecodeRejectsBadInput(t *testing.T) {
	good := appendChunks("n", tokenSet{version: 3, tokens: []int64{1, 2, 3}})[0]
	for i := range len(good) {
		if _, err := decodeChunkMsg(good[:i]); !errors.Is(err, ErrMalformed) {
			t.Fatalf("prefix of %d bytes: err = %v", i, err)
		}
	}
	chunkOf := func(kind uint8, payload ...byte) []byte {
		return claim.Claim{Kind: kind, Name: "n", Version: 1, Payload: payload}.Encode()
	}
	for name, b := range map[string][]byte{
		"other type":            chunkOf(msgTokenChunk + 1),
		"offset beyond total":   chunkOf(msgTokenChunk, 2, 3, 0),
		"overruns total":        chunkOf(msgTokenChunk, append([]byte{1, 0, 2}, make([]byte, 16)...)...),
		"total above maxTokens": chunkOf(msgTokenChunk, 0x81, 0x80, 0x08, 0, 0),
		"tokens not in order":   chunkOf(msgTokenChunk, append([]byte{2, 0, 2}, appendInt64s(nil, []int64{2, 1})...)...),
		"trailing bytes":        chunkOf(msgTokenChunk, 0, 0, 0, 9),
	} {
		if _, err := decodeChunkMsg(b); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: err = %v", name, err)
		}
	}
}

func FuzzDecodeState(f *testing.F) {
	f.Add(appendState(nil, nil))
	f.Add(appendState(nil, append(appendChunks("a", tokenSet{version: 1, tokens: []int64{-5, 7}}), appendChunks("b", tokenSet{version: 2})...)))
	f.Fuzz(func(t *testing.T, b []byte) {
		ms, err := decodeState(b)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error does not wrap ErrMalformed: %v", err)
			}
			return
		}
		again, err := decodeState(appendState(nil, ms))
		if err != nil || len(again) != len(ms) {
			t.Fatalf("re-decode: %d messages, %v", len(again), err)
		}
		// Feeding them to an unsigned Gossip must not panic either.
		g, _ := New(validConfig())
		defer g.Shutdown()
		(*delegate)(g).MergeRemoteState(b, false)
	})
}

func FuzzDecodeChunk(f *testing.F) {
	for _, m := range appendChunks("node-1", tokenSet{version: 5, tokens: sortedTokens(rand.New(rand.NewPCG(5, 6)), 100)}) {
		f.Add(m)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := decodeChunkMsg(b)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error does not wrap ErrMalformed: %v", err)
			}
			return
		}
		if c.offset+len(c.tokens) > c.total || c.total > maxTokens || !ascending(c.tokens) {
			t.Fatalf("accepted an inconsistent chunk: %d tokens at %d of %d", len(c.tokens), c.offset, c.total)
		}
		// Feeding it to a table must not panic either.
		newTokenTable("self").addChunk(c, b)
	})
}
