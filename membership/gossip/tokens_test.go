package gossip

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func chunksOf(t *testing.T, name string, s tokenSet) []chunk {
	t.Helper()
	var out []chunk
	for _, m := range appendChunks(name, s) {
		c, err := decodeChunkMsg(m)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, c)
	}
	return out
}

func TestNewerTokenSetWins(t *testing.T) {
	tt := newTokenTable("self")
	if o := feed(tt, "a", tokenSet{version: 5, tokens: []int64{1}}); o != installed {
		t.Fatalf("first set: %v", o)
	}
	if o := feed(tt, "a", tokenSet{version: 4, tokens: []int64{2}}); o != unchanged {
		t.Fatalf("older set: %v", o)
	}
	if o := feed(tt, "a", tokenSet{version: 5, tokens: []int64{3}}); o != unchanged {
		t.Fatalf("same version: %v", o)
	}
	if o := feed(tt, "a", tokenSet{version: 6, tokens: []int64{4}}); o != installed {
		t.Fatalf("newer set: %v", o)
	}
	if s, _ := tt.get("a"); s.version != 6 || !slices.Equal(s.tokens, []int64{4}) {
		t.Fatalf("current set %+v", s)
	}
}

func TestChunksInstallOnlyWhenComplete(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	set := tokenSet{version: 10, tokens: sortedTokens(rng, 256)}
	cs := chunksOf(t, "a", set)
	rng.Shuffle(len(cs), func(i, j int) { cs[i], cs[j] = cs[j], cs[i] })
	tt := newTokenTable("self")
	for i, c := range cs {
		o := tt.addChunk(c, nil)
		if i < len(cs)-1 {
			if o != accepted {
				t.Fatalf("chunk %d: %v, want accepted", i, o)
			}
			if _, ok := tt.get("a"); ok {
				t.Fatalf("set installed after %d of %d chunks", i+1, len(cs))
			}
			// A repeated chunk adds nothing.
			if o := tt.addChunk(c, nil); o != unchanged {
				t.Fatalf("repeated chunk: %v", o)
			}
		} else if o != installed {
			t.Fatalf("last chunk: %v, want installed", o)
		}
	}
	if s, _ := tt.get("a"); s.version != 10 || !slices.Equal(s.tokens, set.tokens) {
		t.Fatal("assembled set differs")
	}
	// Chunks of the installed or an older version change nothing.
	if o := tt.addChunk(cs[0], nil); o != unchanged {
		t.Fatalf("chunk of installed version: %v", o)
	}
}

func TestNewerVersionAbandonsOlderAssembly(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	old := chunksOf(t, "a", tokenSet{version: 1, tokens: sortedTokens(rng, 200)})
	cur := chunksOf(t, "a", tokenSet{version: 2, tokens: sortedTokens(rng, 200)})
	tt := newTokenTable("self")
	tt.addChunk(old[0], nil)
	for _, c := range cur {
		tt.addChunk(c, nil)
	}
	for _, c := range old[1:] {
		if o := tt.addChunk(c, nil); o != unchanged {
			t.Fatalf("old chunk after newer set: %v", o)
		}
	}
	if s, _ := tt.get("a"); s.version != 2 {
		t.Fatalf("version %d, want 2", s.version)
	}
}

func TestContradictoryChunksAreDropped(t *testing.T) {
	tt := newTokenTable("self")
	// Two chunks of version 1 that claim different totals or different tokens at one position.
	tt.addChunk(chunk{name: "a", version: 1, total: 3, offset: 0, tokens: []int64{1}}, nil)
	if o := tt.addChunk(chunk{name: "a", version: 1, total: 4, offset: 1, tokens: []int64{2}}, nil); o != unchanged {
		t.Fatalf("other total: %v", o)
	}
	if o := tt.addChunk(chunk{name: "a", version: 1, total: 3, offset: 0, tokens: []int64{9}}, nil); o != unchanged {
		t.Fatalf("other token: %v", o)
	}
	if len(tt.pending) != 0 {
		t.Fatal("contradicted assembly kept")
	}
	// Chunks that are each ascending but not across their boundary.
	tt.addChunk(chunk{name: "b", version: 1, total: 2, offset: 0, tokens: []int64{5}}, nil)
	if o := tt.addChunk(chunk{name: "b", version: 1, total: 2, offset: 1, tokens: []int64{4}}, nil); o != unchanged {
		t.Fatalf("descending across chunks: %v", o)
	}
	if _, ok := tt.get("b"); ok {
		t.Fatal("unordered set installed")
	}
}

func TestEmptySetIsOneChunk(t *testing.T) {
	tt := newTokenTable("self")
	cs := chunksOf(t, "a", tokenSet{version: 4})
	if len(cs) != 1 || tt.addChunk(cs[0], nil) != installed {
		t.Fatal("empty set not installed from its single chunk")
	}
}

func TestLocalVersionsIncreaseAndFollowTheClock(t *testing.T) {
	tt := newTokenTable("self")
	s := tt.nextLocal([]int64{1}, 1000)
	if s.version != 1000 {
		t.Fatalf("version %d, want the clock 1000", s.version)
	}
	tt.setLocal(s)
	// A clock that went backwards still yields a higher version.
	if s := tt.nextLocal([]int64{2}, 10); s.version != 1001 {
		t.Fatalf("version %d, want 1001", s.version)
	}
}

// A chunk of our own set newer than ours (signed by this node in an earlier life: claims.go
// drops any it did not sign) is outbid, never wrapping the version around.
func TestPeerWithNewerVersionOfOurTokensIsRefuted(t *testing.T) {
	tt := newTokenTable("self")
	// Before the local node has tokens there is nothing to defend.
	if o := tt.addChunk(chunk{name: "self", version: 50, total: 1, tokens: []int64{7}}, nil); o != unchanged {
		t.Fatalf("no local set yet: %v", o)
	}
	tt.setLocal(tt.nextLocal([]int64{1, 2}, 10))
	if o := tt.addChunk(chunk{name: "self", version: 10, total: 2, tokens: []int64{1, 2}}, nil); o != unchanged {
		t.Fatalf("echo of our own set: %v", o)
	}
	if o := tt.addChunk(chunk{name: "self", version: 60, total: 1, tokens: []int64{7}}, nil); o != refute {
		t.Fatalf("newer chunk: %v", o)
	}
	s, ok := tt.bumped(60)
	if !ok || s.version != 61 || !slices.Equal(s.tokens, []int64{1, 2}) {
		t.Fatalf("after bump: %+v", s)
	}
	if _, ok := tt.bumped(math.MaxUint64); ok {
		t.Fatal("a version at the top of the range was outbid: the next version wraps to 0")
	}
	if s, _ := tt.bumped(math.MaxUint64 - 1); s.version != math.MaxUint64 {
		t.Fatalf("bump below the top: %d", s.version)
	}
}

func TestNormalizeTokens(t *testing.T) {
	in := []int64{3, -1, 2}
	got, err := normalizeTokens(in)
	if err != nil || !slices.Equal(got, []int64{-1, 2, 3}) {
		t.Fatalf("got %v, %v", got, err)
	}
	if in[0] != 3 {
		t.Fatal("input modified")
	}
	if _, err := normalizeTokens([]int64{4, 1, 4}); !errors.Is(err, ErrInvalidTokens) {
		t.Fatalf("duplicates: %v", err)
	}
	if _, err := normalizeTokens(make([]int64, maxTokens+1)); !errors.Is(err, ErrInvalidTokens) {
		t.Fatalf("too many: %v", err)
	}
}
