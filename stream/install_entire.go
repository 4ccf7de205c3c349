package stream

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/sluicedb/sluice/internal/lib/fsx"
	"github.com/sluicedb/sluice/sstable/descriptor"
	"github.com/sluicedb/sluice/sstable/generation"
	"github.com/sluicedb/sluice/wire"
)

// entireInstaller receives an entire sstable: every component file as the sender has it
// (Statistics and CompressionInfo from the Manifest, the TOC its own), checked whole by
// sstable.Verify before the commit publishes it.
type entireInstaller struct {
	installFiles
	comps []Writable // one per Manifest component; nil while it is kept in memory (mem)
	mem   [][]byte   // the small components, kept as they arrive
	// fillers are the filler partitions among the manifest's partitions (an sstable sluice
	// filled, sent whole): verify counts them.
	fillers int64
}

// smallComponent is the largest component of an entire sstable (Data.db aside) kept in
// memory as it arrives and written by Finish, which runs beside the receive loop: for a small
// sstable, creating its files is most of that loop's own per-sstable work. A batch's bytes
// bound what its sstables hold (batchBytes).
const smallComponent = 256 << 10

func newEntireInstaller(f installFiles) (installer, error) {
	e := &entireInstaller{installFiles: f}
	m := f.in.Manifest
	var err error
	e.inst, e.desc, err = generation.Install(e.dir, e.in.Version, func(inst *fsx.Install, d descriptor.Descriptor) error {
		// A new attempt (another process took the generation) starts afresh.
		e.files, e.comps, e.mem = map[descriptor.Component]Writable{}, nil, make([][]byte, len(m.Components))
		for i, c := range m.Components {
			if i != e.in.DataComponent && c.Length <= smallComponent {
				e.mem[i] = make([]byte, 0, c.Length)
				e.comps = append(e.comps, nil)
				continue
			}
			file, err := inst.Create(d.Filename(descriptor.Component(c.Name)))
			if err != nil {
				return err
			}
			w := e.store.writable(file)
			e.files[descriptor.Component(c.Name)] = w
			e.comps = append(e.comps, w)
		}
		return nil
	})
	if err != nil {
		e.Abort()
		return nil, err
	}
	e.dataW = e.comps[e.in.DataComponent]
	return e, nil
}

func (e *entireInstaller) write(d *wire.Data) error {
	switch d.Stream {
	case wire.StreamComponent:
		if w := e.comps[d.Component]; w != nil {
			return e.writeAt(w, d.Payload, int64(d.Offset))
		}
		// Incoming.Accept admitted the frame at the next offset, within the length.
		e.mem[d.Component] = append(e.mem[d.Component], d.Payload...)
		return nil
	case wire.StreamRuns, wire.StreamIndex:
		// An entire sstable announces neither: Accept admits only empty frames of them.
		if len(d.Payload) == 0 {
			return nil
		}
	}
	return fmt.Errorf("%w: stream %v", ErrProtocol, d.Stream)
}

func (e *entireInstaller) writable(d *wire.Data, _ int64) (Writable, int64) {
	if d.Stream == wire.StreamComponent {
		if w := e.comps[d.Component]; w != nil {
			return w, int64(d.Offset)
		}
	}
	return nil, 0
}

// took: nothing waits for an entire sstable's bytes.
func (e *entireInstaller) took(*wire.Data) {}

// placed: an entire sstable's checks are its Verify.
func (e *entireInstaller) placed(*wire.Data, []byte) error { return nil }

func (e *entireInstaller) publishes() (descriptor.Descriptor, bool) { return e.desc, true }

// Finish writes the components kept in memory, the Manifest's and the TOC, checks the
// digest and verifies the whole sstable.
func (e *entireInstaller) Finish(context.Context) (*pending, error) {
	if err := e.seal(); err != nil {
		e.Abort()
		return nil, err
	}
	// An entire copy of an sstable sluice filled carries its fillers (verify counts them).
	return &pending{install: e.inst, final: e.desc, partitions: int64(e.in.Manifest.Partitions) - e.fillers, fillers: e.fillers, strict: e.strict}, nil
}

func (e *entireInstaller) seal() error {
	in, m := e.in, e.in.Manifest
	digest, err := e.digestFile()
	if err != nil {
		return err
	}
	if digest != nil {
		want, err := strconv.ParseUint(strings.TrimSpace(string(digest)), 10, 32)
		if err != nil {
			return fmt.Errorf("%w: Digest.crc32 %q", ErrManifest, digest)
		}
		if uint32(want) != in.Digest() || m.Digest != in.Digest() {
			return fmt.Errorf("%w: Data.db CRC32 %d, Digest.crc32 says %d, manifest %d", ErrChecksum, in.Digest(), want, m.Digest)
		}
	}
	if err := e.spillSmall(); err != nil {
		return err
	}
	toc := []descriptor.Component{}
	for _, c := range m.Components {
		toc = append(toc, descriptor.Component(c.Name))
	}
	write := func(c descriptor.Component, b []byte) error {
		w, err := e.create(c)
		if err != nil {
			return err
		}
		if _, err := w.Write(b); err != nil {
			return e.writeErr(err)
		}
		toc = append(toc, c)
		return nil
	}
	if err := write(descriptor.Statistics, m.Statistics); err != nil {
		return err
	}
	if len(m.Compression) > 0 {
		if err := write(descriptor.CompressionInfo, m.Compression); err != nil {
			return err
		}
	}
	if err := write(descriptor.TOC, descriptor.AppendTOC(nil, append(toc, descriptor.TOC))); err != nil {
		return err
	}
	if err := e.finishFiles(); err != nil {
		return err
	}
	return e.verify()
}

// digestFile returns the first bytes (at most 16) of the received Digest.crc32, or nil when
// the sstable has none.
func (e *entireInstaller) digestFile() ([]byte, error) {
	for i, c := range e.in.Manifest.Components {
		if descriptor.Component(c.Name) != descriptor.Digest {
			continue
		}
		if e.comps[i] == nil {
			return e.mem[i][:min(len(e.mem[i]), 16)], nil
		}
		f, err := os.Open(e.comps[i].Name())
		if err != nil {
			return nil, err
		}
		defer f.Close()
		b := make([]byte, 16)
		n, _ := f.ReadAt(b, 0)
		return b[:n], nil
	}
	return nil, nil
}

// spillSmall creates and writes the components kept in memory.
func (e *entireInstaller) spillSmall() error {
	for i, b := range e.mem {
		if e.comps[i] != nil {
			continue
		}
		w, err := e.create(descriptor.Component(e.in.Manifest.Components[i].Name))
		if err != nil {
			return err
		}
		if _, err := w.Write(b); err != nil {
			return e.writeErr(err)
		}
		e.comps[i] = w
	}
	e.mem = nil
	return nil
}

// verify runs sstable.Verify on the uncommitted files: strictly, by Cassandra's sequential
// rules too, under Config.VerifyStrict. The sender chose to send it whole because the ranges
// hold every partition: checked.
func (e *entireInstaller) verify() error {
	rep, err := verifyUncommitted(e.inst, e.desc, e.in.Ranges, e.strict)
	if err != nil {
		return err
	}
	e.fillers = rep.Fillers
	return nil
}

func (e *entireInstaller) Abort() { e.abort() }
