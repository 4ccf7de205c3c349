package bti

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/sluicedb/sluice/sstable/encoding"
	"github.com/sluicedb/sluice/sstable/token"
)

// walked is what a walk yields, copied, and how it ended.
type walked struct {
	entries []PartitionEntry
	err     string
}

func walkAll(p *PartitionIndex) walked {
	var w walked
	err := p.Walk(func(e PartitionEntry) error {
		e.Prefix = bytes.Clone(e.Prefix)
		w.entries = append(w.entries, e)
		return nil
	})
	if err != nil {
		w.err = err.Error()
	}
	return w
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r     io.ReaderAt
	bytes int64
	reads int
}

func (c *countingReader) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.r.ReadAt(p, off)
	c.bytes += int64(n)
	c.reads++
	return n, err
}

// pagedShapes are cache shapes from the default to one small block, so that nodes cross
// block boundaries and walk frames outlive the blocks they were read from.
var pagedShapes = []struct{ blockSize, blocks int }{
	{cacheBlockSize, cacheBlocks}, {4096, 1}, {4096, 2}, {7, 1}, {13, 3},
}

// checkPagedMatchesMemory requires a paged index to yield exactly what the in-memory one does:
// the same entries (paths, hash bytes, positions, payload offsets) or the same error, and the
// same lookups.
func checkPagedMatchesMemory(t *testing.T, b []byte, lookups [][]byte) {
	t.Helper()
	mem, err := OpenPartitionIndex(b)
	if err != nil {
		t.Fatal(err)
	}
	want := walkAll(mem)
	for _, sh := range pagedShapes {
		p, err := openPartitionIndexPaged(bytes.NewReader(b), int64(len(b)), sh.blockSize, sh.blocks)
		if err != nil {
			t.Fatalf("%+v: %v", sh, err)
		}
		if !bytes.Equal(p.FirstKey, mem.FirstKey) || !bytes.Equal(p.LastKey, mem.LastKey) || p.KeyCount != mem.KeyCount {
			t.Errorf("%+v: footer %v, want %v", sh, p, mem)
		}
		got := walkAll(p)
		if got.err != want.err || len(got.entries) != len(want.entries) {
			t.Fatalf("%+v: walked %d entries, err %q; want %d, %q", sh, len(got.entries), got.err, len(want.entries), want.err)
		}
		for i, e := range got.entries {
			if w := want.entries[i]; !bytes.Equal(e.Prefix, w.Prefix) || e.HashByte != w.HashByte || e.HasHash != w.HasHash ||
				e.Position != w.Position || e.PayloadPos != w.PayloadPos {
				t.Fatalf("%+v: entry %d is %+v, want %+v", sh, i, e, w)
			}
		}
		for _, k := range lookups {
			ge, gok, gerr := p.Lookup(k)
			we, wok, werr := mem.Lookup(k)
			if fmt.Sprint(ge, gok, gerr) != fmt.Sprint(we, wok, werr) {
				t.Fatalf("%+v: Lookup(%x) = %+v, %v, %v; want %+v, %v, %v", sh, k, ge, gok, gerr, we, wok, werr)
			}
		}
	}
}

func TestPagedIndexMatchesInMemory(t *testing.T) {
	for _, s := range btiFixtures(t) {
		t.Run(s.Name, func(t *testing.T) {
			b := s.Read(t, "Partitions.db")
			var lookups [][]byte
			for _, k := range s.Keys(t) {
				lookups = append(lookups, AppendDecoratedKey(nil, token.ByteOrdered.Token(k.Key), k.Key))
			}
			checkPagedMatchesMemory(t, b, lookups)
		})
	}
	for name, keys := range map[string][]testKey{"murmur3": murmurKeys(20_000), "byte-ordered": byteOrderedKeys()} {
		t.Run(name, func(t *testing.T) {
			var lookups [][]byte
			for i, k := range keys {
				if i%37 == 0 {
					lookups = append(lookups, k.comparable, k.comparable[:len(k.comparable)/2])
				}
			}
			checkPagedMatchesMemory(t, buildIndex(t, keys), lookups)
		})
	}
}

// TestPagedWalkReadsTheTrieAboutOnce is the memory claim's other half: a walk through the
// default cache reads the file nearly front to back, not block after block again.
func TestPagedWalkReadsTheTrieAboutOnce(t *testing.T) {
	b := buildIndex(t, murmurKeys(300_000))
	cr := &countingReader{r: bytes.NewReader(b)}
	p, err := OpenPartitionIndexAt(cr, int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	if w := walkAll(p); w.err != "" || len(w.entries) != 300_000 {
		t.Fatalf("walked %d, err %s", len(w.entries), w.err)
	}
	t.Logf("%d-byte index: %d bytes in %d reads", len(b), cr.bytes, cr.reads)
	if cr.bytes > int64(len(b))*5/4 {
		t.Errorf("a walk read %d bytes of a %d-byte index", cr.bytes, len(b))
	}
}

// failingReader fails every read that covers offset bad.
type failingReader struct {
	r   io.ReaderAt
	bad int64
}

var errDisk = errors.New("disk on fire")

func (f failingReader) ReadAt(p []byte, off int64) (int, error) {
	if off <= f.bad && f.bad < off+int64(len(p)) {
		return 0, errDisk
	}
	return f.r.ReadAt(p, off)
}

func TestPagedIndexReportsReadErrors(t *testing.T) {
	b := buildIndex(t, murmurKeys(20_000))
	// A file that fails mid-trie: the walk stops with the read error and its offset.
	p, err := OpenPartitionIndexAt(failingReader{r: bytes.NewReader(b), bad: int64(len(b)) / 2}, int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	err = p.Walk(func(PartitionEntry) error { return nil })
	var oe *encoding.OffsetError
	if !errors.Is(err, errDisk) || !errors.As(err, &oe) || oe.Offset != int64(len(b))/2/cacheBlockSize*cacheBlockSize {
		t.Errorf("walk over a failing file: %v", err)
	}
	// A file shorter than the size it was opened with: the footer read fails.
	if _, err := OpenPartitionIndexAt(bytes.NewReader(b[:len(b)-5]), int64(len(b))); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("open of a shrunk file: %v", err)
	}
	// One that shrinks after the footer was read: the first trie block comes short.
	short := bytes.NewReader(b[:p.FirstKeyPos/2])
	p2, err := openPartitionIndex(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	p2.trie = trieReader{size: p2.FirstKeyPos, cache: newBlockCache(short, int64(len(b)), cacheBlockSize, cacheBlocks)}
	if err := p2.Walk(func(PartitionEntry) error { return nil }); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("walk of a file that shrank: %v", err)
	}
}

// TestPagedWalkAllocatesNothing: once its frames and blocks exist, a walk through the cache
// allocates nothing, whatever the partition count.
func TestPagedWalkAllocatesNothing(t *testing.T) {
	b := buildIndex(t, murmurKeys(50_000))
	p, err := OpenPartitionIndexAt(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	walk := func() {
		if err := p.Walk(func(PartitionEntry) error { n++; return nil }); err != nil {
			t.Fatal(err)
		}
	}
	walk()
	if allocs := testing.AllocsPerRun(3, walk); allocs != 0 {
		t.Errorf("a paged walk of %d entries allocated %v times", 50_000, allocs)
	}
}
