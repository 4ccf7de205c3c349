package gossip

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
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
	in := []stateEntry{
		{name: "a", set: tokenSet{version: 1, tokens: sortedTokens(rng, 256)}},
		{name: "b", set: tokenSet{version: 1 << 62, tokens: []int64{}}},
		{name: "", set: tokenSet{version: 0, tokens: []int64{-1 << 63, 0, 1<<63 - 1}}},
	}
	b := appendState(nil, in)
	out, err := decodeState(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != len(in) {
		t.Fatalf("%d entries, want %d", len(out), len(in))
	}
	for i := range in {
		if out[i].name != in[i].name || out[i].set.version != in[i].set.version || !slices.Equal(out[i].set.tokens, in[i].set.tokens) {
			t.Fatalf("entry %d: got %+v, want %+v", i, out[i], in[i])
		}
	}
	// The result must not alias the input buffer.
	clear(b)
	if out[0].name != "a" || out[0].set.tokens[0] != in[0].set.tokens[0] {
		t.Fatal("decoded state aliases its input")
	}
}

func TestStateDecodeRejectsEveryTruncation(t *testing.T) {
	b := appendState(nil, []stateEntry{{name: "n1", set: tokenSet{version: 9, tokens: []int64{1, 2, 3}}}})
	for i := range len(b) {
		if _, err := decodeState(b[:i]); !errors.Is(err, ErrMalformed) {
			t.Fatalf("prefix of %d bytes: err = %v", i, err)
		}
	}
}

func TestStateDecodeRejectsLiesAboutLengths(t *testing.T) {
	for name, b := range map[string][]byte{
		"huge entry count":    {stateFormat, 0xff, 0xff, 0xff, 0xff, 0x0f},
		"huge token count":    {stateFormat, 1, 1, 'n', 1, 0xff, 0xff, 0xff, 0xff, 0x0f},
		"tokens not in order": appendState(nil, []stateEntry{{name: "n", set: tokenSet{version: 1, tokens: []int64{2, 1}}}}),
		"duplicate token":     appendState(nil, []stateEntry{{name: "n", set: tokenSet{version: 1, tokens: []int64{5, 5}}}}),
		"other format":        {stateFormat + 1, 0},
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
			c, err := decodeChunk(m)
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
		if _, err := decodeChunk(good[:i]); !errors.Is(err, ErrMalformed) {
			t.Fatalf("prefix of %d bytes: err = %v", i, err)
		}
	}
	for name, b := range map[string][]byte{
		"other type":            {msgTokenChunk + 1},
		"offset beyond total":   {msgTokenChunk, 1, 'n', 1, 2, 3, 0},
		"overruns total":        append([]byte{msgTokenChunk, 1, 'n', 1, 1, 0, 2}, make([]byte, 16)...),
		"total above maxTokens": {msgTokenChunk, 1, 'n', 1, 0x81, 0x80, 0x08, 0, 0},
	} {
		if _, err := decodeChunk(b); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: err = %v", name, err)
		}
	}
}

func FuzzDecodeState(f *testing.F) {
	f.Add(appendState(nil, nil))
	f.Add(appendState(nil, []stateEntry{{name: "a", set: tokenSet{version: 1, tokens: []int64{-5, 7}}}, {name: "b", set: tokenSet{version: 2}}}))
	f.Fuzz(func(t *testing.T, b []byte) {
		es, err := decodeState(b)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error does not wrap ErrMalformed: %v", err)
			}
			return
		}
		again, err := decodeState(appendState(nil, es))
		if err != nil || len(again) != len(es) {
			t.Fatalf("re-decode: %d entries, %v", len(again), err)
		}
		for i := range es {
			if again[i].name != es[i].name || again[i].set.version != es[i].set.version || !slices.Equal(again[i].set.tokens, es[i].set.tokens) {
				t.Fatalf("entry %d changed", i)
			}
		}
	})
}

func FuzzDecodeChunk(f *testing.F) {
	for _, m := range appendChunks("node-1", tokenSet{version: 5, tokens: sortedTokens(rand.New(rand.NewPCG(5, 6)), 100)}) {
		f.Add(m)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := decodeChunk(b)
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
		newTokenTable("self").addChunk(c)
	})
}
