package stream

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/sluicedb/sluice/internal/fsx"
	"github.com/sluicedb/sluice/sstable"
	"github.com/sluicedb/sluice/sstable/descriptor"
	"github.com/sluicedb/sluice/sstable/slice"
	"github.com/sluicedb/sluice/wire"
)

// installJob writes one received sstable through an fsx.Install in the target directory:
// nothing is visible under a final name until commit, and abort removes every temporary.
// The receiver, not the peer, names every file: a new generation and a component picked
// from a fixed list.
type installJob struct {
	in    *Incoming
	desc  descriptor.Descriptor
	inst  *fsx.Install
	data  *os.File
	comps []*os.File // entire: one per Manifest component
	files map[descriptor.Component]*os.File
	index []byte
	rows  []byte
	crcw  *slice.CRCWriter
}

func newInstallJob(dir string, in *Incoming) (*installJob, error) {
	need := int64(in.Total()) + 2*int64(in.Manifest.IndexSliceLength) + int64(len(in.Manifest.Statistics)) + 1<<20
	if err := fsx.CheckFreeSpace(dir, need); err != nil {
		return nil, err
	}
	gen, err := descriptor.NextGeneration(dir)
	if err != nil {
		return nil, err
	}
	j := &installJob{in: in, desc: descriptor.Descriptor{Dir: dir, Version: in.Version, ID: strconv.Itoa(gen)},
		files: map[descriptor.Component]*os.File{}}
	j.inst, err = fsx.NewInstall(dir, j.desc.Filename(descriptor.TOC))
	if err != nil {
		return nil, err
	}
	if in.Kind == wire.KindEntire {
		for _, c := range in.Manifest.Components {
			f, err := j.create(descriptor.Component(c.Name))
			if err != nil {
				j.abort()
				return nil, err
			}
			j.comps = append(j.comps, f)
		}
		return j, nil
	}
	if j.data, err = j.create(descriptor.Data); err != nil {
		j.abort()
		return nil, err
	}
	if in.Info == nil {
		j.crcw = slice.NewCRCWriter(in.CRCChunkLength)
	}
	return j, nil
}

func (j *installJob) create(c descriptor.Component) (*os.File, error) {
	f, err := j.inst.Create(j.desc.Filename(c))
	if err != nil {
		return nil, err
	}
	j.files[c] = f
	return f, nil
}

// write puts one accepted Data frame's payload in place. Index and rows slices are kept in
// memory (bounded by Config.MaxIndexSlice): RebuildPartial takes them as bytes.
func (j *installJob) write(d *wire.Data) error {
	switch d.Stream {
	case wire.StreamRuns:
		if j.crcw != nil {
			j.crcw.Write(d.Payload)
		}
		_, err := j.data.WriteAt(d.Payload, int64(d.Offset))
		return err
	case wire.StreamIndex:
		j.index = append(j.index, d.Payload...)
		return nil
	case wire.StreamComponent:
		if j.in.Kind == wire.KindEntire {
			_, err := j.comps[d.Component].WriteAt(d.Payload, int64(d.Offset))
			return err
		}
		j.rows = append(j.rows, d.Payload...)
		return nil
	}
	return fmt.Errorf("%w: stream %v", ErrProtocol, d.Stream)
}

// finish rebuilds (partial) or completes and verifies (entire) the sstable, then commits.
// It returns the partition count.
func (j *installJob) finish() (int64, error) {
	in, m := j.in, j.in.Manifest
	var partitions int64
	if in.Kind == wire.KindPartial {
		spec, err := slice.SpecFromStatistics(in.Version, m.Statistics, j.rows)
		if err != nil {
			return 0, fmt.Errorf("%w: %w", ErrManifest, err)
		}
		first := int64(-1)
		if err := slice.ForEachIndexRecord(j.index, spec.Partitioner, func(p *sstable.Partition) error {
			if first < 0 {
				first = p.Position
			}
			partitions++
			return nil
		}); err != nil {
			return 0, fmt.Errorf("%w: %w", ErrManifest, err)
		}
		if uint64(partitions) != m.Partitions {
			return 0, fmt.Errorf("%w: index slice holds %d partitions, manifest says %d", ErrManifest, partitions, m.Partitions)
		}
		if err := in.ResolveShift(first); err != nil {
			return 0, err
		}
		data := slice.DataResult{Compression: in.Info, DataLength: int64(m.DataLength), FileLength: int64(m.DataFileLength),
			Digest: in.Digest(), HasDigest: true}
		if j.crcw != nil {
			data.CRC, data.Digest = j.crcw.Result()
		}
		if _, err := slice.RebuildPartial(spec, j.inst, j.desc, in.Shift, in.Hi, j.index, data); err != nil {
			return 0, fmt.Errorf("%w: rebuilding: %w", ErrManifest, err)
		}
	} else {
		if err := j.finishEntire(); err != nil {
			return 0, err
		}
		partitions = int64(m.Partitions)
	}
	return partitions, j.inst.Commit()
}

func (j *installJob) finishEntire() error {
	in, m := j.in, j.in.Manifest
	if f := j.files[descriptor.Digest]; f != nil {
		b := make([]byte, 16)
		n, _ := f.ReadAt(b, 0)
		want, err := strconv.ParseUint(strings.TrimSpace(string(b[:n])), 10, 32)
		if err != nil {
			return fmt.Errorf("%w: Digest.crc32 %q", ErrManifest, b[:n])
		}
		if uint32(want) != in.Digest() || m.Digest != in.Digest() {
			return fmt.Errorf("%w: Data.db CRC32 %d, Digest.crc32 says %d, manifest %d", ErrChecksum, in.Digest(), want, m.Digest)
		}
	}
	toc := []descriptor.Component{}
	for _, c := range m.Components {
		toc = append(toc, descriptor.Component(c.Name))
	}
	write := func(c descriptor.Component, b []byte) error {
		f, err := j.create(c)
		if err != nil {
			return err
		}
		_, err = f.Write(b)
		toc = append(toc, c)
		return err
	}
	if err := write(descriptor.Statistics, m.Statistics); err != nil {
		return err
	}
	if len(m.Compression) > 0 {
		if err := write(descriptor.CompressionInfo, m.Compression); err != nil {
			return err
		}
	}
	toc = append(toc, descriptor.TOC)
	f, err := j.create(descriptor.TOC)
	if err != nil {
		return err
	}
	if _, err := f.Write(descriptor.AppendTOC(nil, toc)); err != nil {
		return err
	}
	return j.verify()
}

// verify runs sstable.Verify on the uncommitted files through a scratch directory of
// symbolic links with final names pointing at the install's temporaries.
func (j *installJob) verify() error {
	scratch, err := os.MkdirTemp("", "sluice-verify-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(scratch)
	d := j.desc
	d.Dir = scratch
	for c, f := range j.files {
		target, err := filepath.Abs(f.Name())
		if err != nil {
			return err
		}
		if err := os.Symlink(target, d.Path(c)); err != nil {
			return err
		}
	}
	rep, err := sstable.Verify(d.Prefix(), sstable.VerifyOptions{})
	if err != nil {
		return fmt.Errorf("%w: verify: %w", ErrChecksum, err)
	}
	if !rep.OK {
		return fmt.Errorf("%w: verify: %v", ErrChecksum, rep.Problems)
	}
	return nil
}

func (j *installJob) abort() {
	if j.inst != nil {
		j.inst.Abort()
	}
}

// localCode maps a local install error to its wire code.
func localCode(err error) wire.Code {
	var nse *fsx.NoSpaceError
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, fsx.ErrNoSpace) || errors.As(err, &nse) {
		return wire.CodeNoSpace
	}
	return codeOf(err)
}
