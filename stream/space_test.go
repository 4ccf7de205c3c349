package stream

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/sluicedb/sluice/internal/lib/fsx"
	"github.com/sluicedb/sluice/sstable/token"
	"github.com/sluicedb/sluice/wire"
)

// A session announcing more than the directory's free space is refused before any byte
// flows, with an error naming the peer, the table and the bytes; concurrent sessions into one
// directory are admitted against what the others still have to receive.
func TestSessionsAreAdmittedAgainstFreeSpaceAndEachOther(t *testing.T) {
	dir := t.TempDir()
	free, err := fsx.FreeBytes(dir)
	if errors.Is(err, errors.ErrUnsupported) {
		t.Skip("free space unknown here")
	}
	if err != nil {
		t.Fatal(err)
	}
	l := &spaceLedger{held: map[string]map[*spaceHold]struct{}{}}
	who := SpaceError{Peer: "n2", Keyspace: "ks", Table: "t", SSTables: 3}
	_, err = l.reserve(dir, free*2, func() int64 { return 0 }, who)
	var se *SpaceError
	if !errors.As(err, &se) || !errors.Is(err, fsx.ErrNoSpace) || codeOf(err) != wire.CodeNoSpace {
		t.Fatalf("twice the free space admitted: %v", err)
	}
	for _, want := range []string{"ks.t", "n2", "3 sstables", dir} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not name %q", err, want)
		}
	}
	// Six tenths of the free space, twice: the second waits for the first's bytes.
	var got int64
	release, err := l.reserve(dir, free*6/10, func() int64 { return got }, who)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.reserve(dir, free*6/10, func() int64 { return 0 }, who); !errors.As(err, &se) || se.Reserved == 0 {
		t.Fatalf("a second session admitted against the first's announced bytes: %v", err)
	}
	got = free * 6 / 10 // the first received everything: the file system counts it now
	r2, err := l.reserve(dir, free/10, func() int64 { return 0 }, who)
	if err != nil {
		t.Fatalf("refused once the first session's bytes arrived: %v", err)
	}
	release()
	release()
	r2()
	if len(l.held) != 0 {
		t.Fatalf("holds left after release: %v", l.held)
	}
}

// The space a Prepare announces: every sstable's bytes, room for the largest rows rewrite,
// and a margin.
func TestSessionSpaceCountsEveryPlannedSSTable(t *testing.T) {
	got := sessionSpace([]wire.PlannedSSTable{{Kind: wire.KindPartial, Bytes: 100}, {Kind: wire.KindRows, Bytes: 50},
		{Kind: wire.KindEntire, Bytes: 10}})
	if want := int64(100 + 50 + 10 + 2*50 + 1<<20); got != want {
		t.Fatalf("%d, want %d", got, want)
	}
}

// End to end: a Fetch into a directory whose free space other sessions hold is refused on
// Prepare with no_space, receives no byte and leaves nothing in the directory.
func TestFetchIsRefusedBeforeStreamingWhenTheSessionDoesNotFit(t *testing.T) {
	ca := newTestCA(t)
	root := t.TempDir()
	genTable(t, root, "big_lz4", genSpec{version: "oa", compression: "lz4", seeds: []uint64{1}})
	_, addr := testServer(t, Config{}, dirCatalog{root}, ca.server(t))
	dir := t.TempDir()
	if _, err := fsx.FreeBytes(dir); errors.Is(err, errors.ErrUnsupported) {
		t.Skip("free space unknown here")
	}
	// Another session into dir has announced more than any file system has free.
	other := &spaceHold{need: 1 << 62, received: func() int64 { return 0 }}
	receiving.mu.Lock()
	receiving.held[dir] = map[*spaceHold]struct{}{other: {}}
	receiving.mu.Unlock()
	release := func() {
		receiving.mu.Lock()
		delete(receiving.held, dir)
		receiving.mu.Unlock()
	}
	defer release()
	all, _ := token.ParseRanges(token.Murmur3, "(0,0]")
	res, err := Fetch(context.Background(), Config{}, ca.client(t, ca),
		FetchRequest{Peer: addr, Keyspace: "ks", Table: "big_lz4", Ranges: all, Dir: dir}, nil)
	var se *SpaceError
	if !errors.As(err, &se) || codeOf(err) != wire.CodeNoSpace || se.Reserved == 0 {
		t.Fatalf("fetch into a full directory: %v", err)
	}
	if res == nil || res.BytesReceived != 0 || len(res.SSTables) != 0 {
		t.Fatalf("received %+v before refusing", res)
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), "-Data.db") || strings.HasPrefix(e.Name(), fsx.TempPrefix) {
			t.Errorf("%s left in the directory", e.Name())
		}
	}
	// Once the other session ends, the same fetch fits.
	release()
	if _, err := Fetch(context.Background(), Config{}, ca.client(t, ca),
		FetchRequest{Peer: addr, Keyspace: "ks", Table: "big_lz4", Ranges: all, Dir: dir}, nil); err != nil {
		t.Fatalf("fetch after the space was released: %v", err)
	}
}
