package gossip

import (
	"errors"
	"strings"
	"testing"

	"github.com/hashicorp/memberlist"

	"github.com/sluicedb/sluice/membership/ring"
)

func TestMetaRoundTrip(t *testing.T) {
	for _, m := range []NodeMeta{
		{},
		{State: ring.Normal, TokensVersion: 1},
		{StreamAddr: "10.0.0.1:7000", AdminAddr: "10.0.0.1:8080", DC: "eu-west", Rack: "r1", State: ring.Leaving, TokensVersion: 1<<64 - 1},
		{StreamAddr: "[::1]:7000", DC: "dc1", Rack: "rack-ünïcode", State: ring.Left},
	} {
		b, err := appendMeta(nil, m)
		if err != nil {
			t.Fatalf("%+v: %v", m, err)
		}
		got, err := decodeMeta(b)
		if err != nil || got != m {
			t.Fatalf("round trip of %+v = %+v, %v", m, got, err)
		}
	}
}

func TestMetaIsCompact(t *testing.T) {
	m := NodeMeta{StreamAddr: "10.0.0.1:7000", AdminAddr: "10.0.0.1:8080", DC: "dc1", Rack: "r1", State: ring.Normal, TokensVersion: 1 << 62}
	b, err := appendMeta(nil, m)
	if err != nil {
		t.Fatal(err)
	}
	// 2 header bytes, 9 for the version, 4 length bytes and 31 bytes of strings.
	if len(b) != 2+9+4+31 {
		t.Fatalf("encoded in %d bytes", len(b))
	}
}

func TestMetaTooLargeIsAnErrorNotATruncation(t *testing.T) {
	m := NodeMeta{StreamAddr: strings.Repeat("a", 250), AdminAddr: strings.Repeat("b", 250), DC: "dc1", Rack: "r1", State: ring.Normal}
	prefix := []byte("keep")
	b, err := appendMeta(prefix, m)
	if !errors.Is(err, ErrMetaTooLarge) {
		t.Fatalf("err = %v, want ErrMetaTooLarge", err)
	}
	if string(b) != "keep" {
		t.Fatalf("buffer not restored: %q", b)
	}
	// Exactly at the limit is fine; one byte more is not.
	m = NodeMeta{StreamAddr: strings.Repeat("a", memberlist.MetaMaxSize-2-1-4-1)}
	if b, err := appendMeta(nil, m); err != nil || len(b) != memberlist.MetaMaxSize {
		t.Fatalf("at the limit: %d bytes, %v", len(b), err)
	}
	m.StreamAddr += "a"
	if _, err := appendMeta(nil, m); !errors.Is(err, ErrMetaTooLarge) {
		t.Fatalf("one over the limit: %v", err)
	}
}

func TestLocalMetaReservesRoomForAnyTokensVersion(t *testing.T) {
	// Fits with version 0 (1 byte) but not with the largest version (10 bytes): a later
	// SetTokens could not announce it, so it is refused up front.
	m := NodeMeta{StreamAddr: strings.Repeat("a", memberlist.MetaMaxSize-2-1-4-1)}
	if _, err := encodeLocalMeta("n1", m); !errors.Is(err, ErrMetaTooLarge) {
		t.Fatalf("err = %v, want ErrMetaTooLarge", err)
	}
}

func TestMetaRejectsUnknownState(t *testing.T) {
	if _, err := appendMeta(nil, NodeMeta{State: ring.Left + 1}); !errors.Is(err, ErrInvalidMeta) {
		t.Fatalf("encode: %v", err)
	}
	b, _ := appendMeta(nil, NodeMeta{State: ring.Normal})
	b[1] = byte(ring.Left + 1)
	if _, err := decodeMeta(b); !errors.Is(err, ErrMalformed) {
		t.Fatalf("decode: %v", err)
	}
}

func TestMetaDecodeRejectsEveryTruncation(t *testing.T) {
	b, err := appendMeta(nil, NodeMeta{StreamAddr: "s:1", AdminAddr: "a:2", DC: "dc", Rack: "r", State: ring.Normal, TokensVersion: 300})
	if err != nil {
		t.Fatal(err)
	}
	for i := range len(b) {
		if _, err := decodeMeta(b[:i]); !errors.Is(err, ErrMalformed) {
			t.Fatalf("prefix of %d bytes: err = %v", i, err)
		}
	}
}

func TestMetaDecodeSkipsFieldsAppendedLater(t *testing.T) {
	m := NodeMeta{StreamAddr: "s:1", DC: "dc", State: ring.Joining, TokensVersion: 7}
	b, _ := appendMeta(nil, m)
	got, err := decodeMeta(append(b, 0x05, 'x', 'y'))
	if err != nil || got != m {
		t.Fatalf("got %+v, %v", got, err)
	}
}

func TestMetaDecodeRejectsOtherFormat(t *testing.T) {
	b, _ := appendMeta(nil, NodeMeta{})
	b[0] = metaFormat + 1
	if _, err := decodeMeta(b); !errors.Is(err, ErrMalformed) {
		t.Fatalf("err = %v", err)
	}
}

func FuzzDecodeMeta(f *testing.F) {
	for _, m := range []NodeMeta{{}, {StreamAddr: "10.0.0.1:7000", AdminAddr: "x:1", DC: "dc1", Rack: "r1", State: ring.Normal, TokensVersion: 1 << 60}} {
		b, _ := appendMeta(nil, m)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := decodeMeta(b)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error does not wrap ErrMalformed: %v", err)
			}
			return
		}
		// Whatever decodes re-encodes (it came in under some size limit only if b did) and
		// decodes to the same value.
		enc, err := appendMeta(nil, m)
		if err != nil {
			if errors.Is(err, ErrMetaTooLarge) && len(b) > memberlist.MetaMaxSize-20 {
				return
			}
			t.Fatalf("re-encode: %v", err)
		}
		if again, err := decodeMeta(enc); err != nil || again != m {
			t.Fatalf("re-decode: %+v, %v", again, err)
		}
	})
}

// A replacement's Replaces survives the round trip; metadata without it (older nodes) still
// decodes, as "".
func TestMetaReplacesRoundTripsAndIsOptional(t *testing.T) {
	m := NodeMeta{StreamAddr: "10.0.0.1:7400", AdminAddr: "127.0.0.1:7401", DC: "dc1", Rack: "r1", State: ring.Normal, Replaces: "n3"}
	b, err := appendMeta(nil, m)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeMeta(b)
	if err != nil || got != m {
		t.Fatalf("decoded %+v, %v; want %+v", got, err, m)
	}
	m.Replaces = ""
	short, err := appendMeta(nil, m)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := decodeMeta(short); err != nil || got.Replaces != "" || len(short) >= len(b) {
		t.Fatalf("without replaces: %+v, %v (%d bytes, with: %d)", got, err, len(short), len(b))
	}
}

// A sidecar's Cassandra host id survives the round trip, with or without Replaces.
func TestMetaCassandraHostIDRoundTrips(t *testing.T) {
	for _, m := range []NodeMeta{
		{StreamAddr: "10.0.0.1:7400", State: ring.Normal, CassandraHostID: "6b4f2d1e-1c1a-4c6e-9a55-0c0d5a1b2c3d"},
		{StreamAddr: "10.0.0.1:7400", State: ring.Normal, Replaces: "n3", CassandraHostID: "h"},
	} {
		b, err := appendMeta(nil, m)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := decodeMeta(b); err != nil || got != m {
			t.Fatalf("decoded %+v, %v; want %+v", got, err, m)
		}
	}
}

// A member is replaced once its proven replacement owns tokens; a replacement still streaming
// (no state announced), one that left, or one whose identity is not proven replaces nothing.
func TestReplacedOnlyByAnOwningReplacement(t *testing.T) {
	ms := []Member{
		{Name: "n3", Meta: NodeMeta{State: ring.Normal}, Liveness: StateDead, Identity: IdentityProven},
		{Name: "n4", Meta: NodeMeta{State: ring.Normal, Replaces: "n3"}, Liveness: StateAlive, Identity: IdentityProven},
		{Name: "n5", Meta: NodeMeta{Replaces: "n1"}, Liveness: StateAlive, Identity: IdentityProven},
		{Name: "n6", Meta: NodeMeta{State: ring.Left, Replaces: "n2"}, Liveness: StateLeft, Identity: IdentityProven},
		{Name: "n7", Meta: NodeMeta{State: ring.Normal, Replaces: "n1"}, Liveness: StateAlive, Identity: IdentityPending},
	}
	got := Replaced(ms)
	if len(got) != 1 || got["n3"] != "n4" {
		t.Fatalf("Replaced = %v, want n3 by n4 only", got)
	}
}
