package stream

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/sluicedb/sluice/internal/lib/fsx"
	"github.com/sluicedb/sluice/sstable"
	"github.com/sluicedb/sluice/sstable/compress"
	"github.com/sluicedb/sluice/sstable/descriptor"
	"github.com/sluicedb/sluice/sstable/generation"
	"github.com/sluicedb/sluice/sstable/slice"
	"github.com/sluicedb/sluice/sstable/token"
)

// rowsInstaller receives a rows sstable: like a partial child, but into a private scratch
// directory inside the target directory; Finish commits it there, rewrites its rows into a
// new sstable (slice.Split, ModeRewrite) in the scratch, and prepares that one's copy into
// the target directory under a new generation, which the commit publishes (TOC last) before
// the scratch goes.
type rowsInstaller struct {
	childInstaller
	pub *fsx.Install // the rewrite's copy into the target directory, once made
}

func newRowsInstaller(f installFiles, scratchPrefix string) (installer, error) {
	r := &rowsInstaller{childInstaller: childInstaller{installFiles: f}}
	r.child.files = &r.installFiles
	if err := r.inScratch(scratchPrefix); err != nil {
		r.Abort()
		return nil, err
	}
	if f.in.Info == nil {
		r.child.crcw = compress.NewCRCWriter(f.in.CRCChunkLength)
	}
	return r, nil
}

// publishes: the rewrite names the sstable.
func (r *rowsInstaller) publishes() (descriptor.Descriptor, bool) {
	return descriptor.Descriptor{}, false
}

func (r *rowsInstaller) Finish(ctx context.Context) (*pending, error) {
	p, err := r.finish(ctx)
	if err != nil {
		r.Abort()
		return nil, err
	}
	return p, nil
}

func (r *rowsInstaller) finish(ctx context.Context) (*pending, error) {
	partitions, err := r.child.seal()
	if err != nil {
		return nil, err
	}
	if err := r.inst.Commit(); err != nil {
		return nil, err
	}
	child, err := sstable.Open(r.desc.Prefix())
	if err != nil {
		return nil, fmt.Errorf("%w: opening the received child: %w", ErrChecksum, err)
	}
	defer child.Close()
	everything := token.RangeSet{{Left: child.Partitioner.MinToken(), Right: child.Partitioner.MinToken()}}
	out := filepath.Join(r.scratch, "rewritten")
	res, err := slice.Split(ctx, child, everything, out, slice.Options{Mode: slice.ModeRewrite})
	if err != nil {
		return nil, fmt.Errorf("rewriting the rows of %s: %w", r.in.ID, err)
	}
	if len(res.Children) != 1 || res.Children[0].Partitions != partitions {
		return nil, fmt.Errorf("%w: rewriting %d partitions gave %d sstables", ErrManifest, partitions, len(res.Children))
	}
	src := res.Children[0].Desc
	ents, err := os.ReadDir(out)
	if err != nil {
		return nil, err
	}
	comps := []descriptor.Component{descriptor.Data} // first: its Writable exists already
	for _, e := range ents {
		if c, ok := strings.CutPrefix(e.Name(), src.Filename("")); ok && c != "" && c != string(descriptor.Data) {
			comps = append(comps, descriptor.Component(c))
		}
	}
	// Data.db is created under the generation lock; the rest, and the copies, after it.
	var first Writable
	var final descriptor.Descriptor
	r.pub, final, err = generation.Install(r.dir, r.in.Version, func(inst *fsx.Install, d descriptor.Descriptor) error {
		f, err := inst.Create(d.Filename(descriptor.Data))
		if err == nil {
			first = r.store.writable(f)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	for _, c := range comps {
		dst := first
		if c != descriptor.Data {
			f, err := r.pub.Create(final.Filename(c))
			if err != nil {
				return nil, err
			}
			dst = r.store.writable(f)
		}
		if err := copyInto(dst, src.Path(c)); err != nil {
			dst.Abort()
			return nil, r.writeErr(err)
		}
		if err := dst.Finish(); err != nil {
			return nil, r.writeErr(err)
		}
	}
	return &pending{install: r.pub, final: final, partitions: partitions, scratch: r.scratch}, nil
}

func (r *rowsInstaller) Abort() {
	r.child.stop()
	r.abort()
	if r.pub != nil {
		r.pub.Abort()
	}
}

// copyInto copies the file at path into dst: in-kernel (copy_file_range, a clone where the
// file system can) when dst has a file, else through memory.
func copyInto(dst Writable, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if to := dst.File(); to != nil {
		fi, err := f.Stat()
		if err != nil {
			return err
		}
		_, err = fsx.CopyRange(to, 0, f, 0, fi.Size())
		return err
	}
	buf := make([]byte, 1<<20)
	for off := int64(0); ; {
		n, err := f.ReadAt(buf, off)
		if n > 0 {
			if _, werr := dst.WriteAt(buf[:n], off); werr != nil {
				return werr
			}
			off += int64(n)
		}
		if err != nil {
			if err == io.EOF {
				return nil
			}
			return err
		}
	}
}
