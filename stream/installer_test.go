package stream

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/sluicedb/sluice/wire"
)

// The installer contract, for every kind: after creation exactly one of Finish or Abort is
// called, and an Abort, or a Finish that fails, leaves the target directory as it found it
// (empty here): no visible file, no install temporary, no scratch directory. A Finish that
// succeeds leaves nothing visible either until the commit it hands back.
func TestInstallerLeavesNothingButItsCommit(t *testing.T) {
	for _, comp := range []string{"lz4", "none"} {
		for _, kind := range []wire.Kind{wire.KindEntire, wire.KindPartial, wire.KindRows} {
			t.Run(comp+"/"+kind.String(), func(t *testing.T) {
				for _, end := range []string{"abort mid-way", "abort when complete", "failed finish", "finish"} {
					dir := t.TempDir()
					inst, in := receiveInto(t, dir, comp, kind, end)
					switch end {
					case "abort mid-way", "abort when complete":
						inst.Abort()
					case "failed finish":
						if _, err := inst.Finish(context.Background()); !errors.Is(err, ErrChecksum) {
							t.Fatalf("%s: Finish of a corrupt sstable: %v", end, err)
						}
					case "finish":
						p, err := inst.Finish(context.Background())
						if err != nil {
							t.Fatalf("%s: %v", end, err)
						}
						if v := visible(t, dir); len(v) != 0 {
							t.Errorf("%s: visible before the commit: %v", end, v)
						}
						if err := p.commit(); err != nil {
							t.Fatal(err)
						}
						if _, err := os.Stat(p.final.Path("TOC.txt")); err != nil || p.partitions != int64(in.Manifest.Partitions) {
							t.Errorf("%s: published %s with %d partitions (%v), want %d", end, p.final, p.partitions, err, in.Manifest.Partitions)
						}
						for _, e := range hidden(t, dir) {
							t.Errorf("%s: %s left beside the published sstable", end, e)
						}
						continue
					}
					if es := allNames(t, dir); len(es) != 0 {
						t.Errorf("%s: left %v", end, es)
					}
				}
			})
		}
	}
}

// receiveInto plans a child (or the whole sstable, entire) of a generated sstable with the real
// sender and writes its sources through a new installer into dir as the receive loop does:
// all of them, or half ("abort mid-way"), or all with the first chunk corrupted and its inline
// CRC recomputed ("failed finish": only the digest can tell).
func receiveInto(t *testing.T, dir, comp string, kind wire.Kind, end string) (installer, *Incoming) {
	t.Helper()
	p, tb, st, pa := outgoingPartial(t, comp, 5, 60)
	o := &outgoing{planned: wire.PlannedSSTable{ID: filepath.Base(p) + "@1", Kind: kind, Partitions: uint64(pa.Plan.Partitions)},
		parent: tb, stats: st, partial: pa}
	if kind == wire.KindEntire {
		o = &outgoing{planned: wire.PlannedSSTable{ID: filepath.Base(p), Kind: kind, Partitions: uint64(pa.ParentPartitions)}, parent: tb, stats: st}
	}
	m, srcs, err := manifestFor(o, fileStorage{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		for _, s := range srcs {
			if s.r != nil {
				s.r.Close()
			}
		}
	}()
	step, err := session(t, m).Step(clone(m))
	if err != nil || step.Receive == nil {
		t.Fatal(step, err)
	}
	in := step.Receive
	inst, err := newInstaller(dir, ".sluice-rows-test-", fileStorage{}, in, false)
	if err != nil {
		t.Fatal(err)
	}
	for i, src := range srcs {
		if end == "abort mid-way" && i >= len(srcs)/2 {
			break
		}
		b := src.mem
		if b == nil {
			b = make([]byte, src.n)
			if err := src.r.ReadAt(b, src.off); err != nil {
				t.Fatal(err)
			}
		}
		d := wire.Data{SSTableID: m.SSTableID, Stream: src.stream, Component: src.component, Payload: b}
		if in.isData(&d) && end == "failed finish" {
			d.Payload = append([]byte(nil), b...)
			corruptFirstChunk(d.Payload, in)
		}
		if err := in.Accept(&d); err != nil {
			t.Fatal(err)
		}
		if err := inst.write(&d); err != nil {
			t.Fatal(err)
		}
	}
	if end != "abort mid-way" {
		if err := in.Complete(); err != nil {
			t.Fatal(err)
		}
	}
	return inst, in
}

func allNames(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}
