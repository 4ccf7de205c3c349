package stream

import (
	"context"
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"testing"

	"github.com/sluicedb/sluice/sstable"
	"github.com/sluicedb/sluice/sstable/slice"
	"github.com/sluicedb/sluice/sstable/token"
	"github.com/sluicedb/sluice/wire"
)

// A hostile data plane corrupts one chunk of a partial (or rows) child and recomputes its
// inline CRC, so every chunk check passes. The manifest's digest, derived by the sender from
// the parent's stored checksums and sent on the authenticated control stream, does not match
// what arrived: the receiver fails the sstable and nothing becomes visible (finding 8).
func TestReceiverRefusesChunkWithRecomputedCRC(t *testing.T) {
	for _, comp := range []string{"lz4", "none"} {
		for _, kind := range []wire.Kind{wire.KindPartial, wire.KindRows} {
			t.Run(comp+"/"+kind.String(), func(t *testing.T) {
				for _, hostile := range []bool{false, true} {
					err, dir := receiveFromParent(t, comp, kind, hostile)
					switch {
					case !hostile && err != nil:
						t.Fatalf("honest sender: %v", err)
					case hostile && !errors.Is(err, ErrChecksum):
						t.Fatalf("hostile sender: err = %v, want a checksum error", err)
					case hostile && len(visible(t, dir)) != 0:
						t.Errorf("visible after a refused sstable: %v", visible(t, dir))
					case !hostile && len(visible(t, dir)) == 0:
						t.Error("honest sender: nothing installed")
					}
				}
			})
		}
	}
}

// receiveFromParent plans a partial child of a generated sstable with the real sender
// (manifestFor) and feeds its sources to a Receiver and install job as the fetch driver
// does; hostile corrupts the first chunk in flight, keeping its inline CRC consistent.
func receiveFromParent(t *testing.T, comp string, kind wire.Kind, hostile bool) (error, string) {
	t.Helper()
	p, tb, st, pa := outgoingPartial(t, comp, 5, 60)
	o := &outgoing{planned: wire.PlannedSSTable{ID: filepath.Base(p) + "@1", Kind: kind, Partitions: uint64(pa.Plan.Partitions)},
		parent: tb, stats: st, partial: pa}
	m, srcs, err := manifestFor(o, fileStorage{})
	if err != nil {
		t.Fatal(err)
	}
	r := session(t, m)
	step, err := r.Step(clone(m)) // as decoded from the control stream
	if err != nil || step.Receive == nil {
		t.Fatal(step, err)
	}
	in := step.Receive
	dir := t.TempDir()
	inst, err := newInstaller(dir, ".sluice-rows-test-", fileStorage{}, in, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, src := range srcs {
		b := src.mem
		if b == nil {
			b = make([]byte, src.n)
			if err := src.r.ReadAt(b, src.off); err != nil {
				t.Fatal(err)
			}
		}
		if src.stream == wire.StreamRuns && hostile {
			b = append([]byte(nil), b...)
			corruptFirstChunk(b, in)
		}
		d := wire.Data{SSTableID: m.SSTableID, Stream: src.stream, Component: src.component, Payload: b}
		if err := in.Accept(&d); err != nil {
			t.Fatalf("hostile=%v: the chunk checks should pass, got %v", hostile, err)
		}
		if err := inst.write(&d); err != nil {
			t.Fatal(err)
		}
	}
	if err := in.Complete(); err != nil {
		t.Fatal(err)
	}
	pend, err := inst.Finish(context.Background())
	if err == nil {
		err = pend.commit()
	}
	return err, dir
}

// corruptFirstChunk flips a byte of the first chunk of a child's Data.db and, compressed,
// rewrites that chunk's inline CRC to match.
func corruptFirstChunk(b []byte, in *Incoming) {
	if in.Info == nil {
		b[len(b)/2] ^= 0x20
		return
	}
	end := int64(len(b))
	if len(in.Info.Offsets) > 1 {
		end = in.Info.Offsets[1]
	}
	body := b[in.Info.Offsets[0] : end-4]
	body[len(body)/2] ^= 0x20
	c := crc32.ChecksumIEEE(body)
	b[end-4], b[end-3], b[end-2], b[end-1] = byte(c>>24), byte(c>>16), byte(c>>8), byte(c)
}

// Finding 1 of issue 10 for streaming: an uncompressed parent whose Data.db is damaged (its
// CRC.db still right) never yields an installed child holding the damage. A flip inside the
// child's bytes is refused, by the sender's digest from CRC.db (a cut edge slice) or by the
// receiver's comparison, with a checksum error and nothing visible; a flip outside them
// leaves an intact child that verifies.
func TestFetchNeverLaundersCorruptUncompressedParent(t *testing.T) {
	ca := newTestCA(t)
	root := t.TempDir()
	prefixes := genTable(t, root, "u", genSpec{version: "oa", compression: "none", seeds: []uint64{21}})
	data := prefixes[0] + "-Data.db"
	orig, err := os.ReadFile(data)
	if err != nil {
		t.Fatal(err)
	}
	ranges, _ := token.ParseRanges(token.Murmur3, "(-3000000000000000000,4000000000000000000]")
	tb, err := sstable.Open(prefixes[0])
	if err != nil {
		t.Fatal(err)
	}
	ps, _, err := slice.Partials(tb, ranges, slice.PartialOptions{OnePerParent: true})
	tb.Close()
	if err != nil || len(ps) != 1 {
		t.Fatalf("partials: %v, %d", err, len(ps))
	}
	segs := ps[0].Layout.Segments
	lo, hi := segs[0].SrcOff, segs[len(segs)-1].SrcEnd
	_, addr := testServer(t, Config{}, dirCatalog{root}, ca.server(t))
	// Outside: past the CRC.db slice the child's last byte is in (a flip inside that slice
	// makes the slice, and so the child's edge, unprovable: refused too).
	outside := min(int64(len(orig))-1, (hi/65536+1)*65536+100)
	for _, at := range []int64{lo, lo + 1, (lo + hi) / 2, hi - 1, outside} {
		b := append([]byte(nil), orig...)
		b[at] ^= 0x04
		if err := os.WriteFile(data, b, 0o644); err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		res, err := Fetch(context.Background(), Config{}, ca.client(t, ca),
			FetchRequest{Peer: addr, Keyspace: "ks", Table: "u", Ranges: ranges, Dir: dir}, nil)
		inside := at >= lo && at < hi
		switch {
		case inside && !errors.Is(err, ErrChecksum):
			t.Errorf("byte %d (child bytes [%d, %d)) flipped: %v, want a checksum error", at, lo, hi, err)
		case inside && (len(visible(t, dir)) != 0 || (res != nil && len(res.SSTables) != 0)):
			t.Errorf("byte %d flipped: visible %v", at, visible(t, dir))
		case !inside && err != nil:
			t.Errorf("byte %d outside the child flipped: %v", at, err)
		case !inside:
			for _, s := range res.SSTables {
				if rep, err := sstable.Verify(s.Path, sstable.VerifyOptions{Extended: true}); err != nil || !rep.OK {
					t.Errorf("child %s: %v %v", s.Path, err, rep.Problems)
				}
			}
		}
	}
}
