package ops

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/sluicedb/sluice/internal/catalog"
	"github.com/sluicedb/sluice/internal/lib/fsx"
	"github.com/sluicedb/sluice/sstable"
	"github.com/sluicedb/sluice/sstable/descriptor"
	"github.com/sluicedb/sluice/sstable/generation"
)

// MaxListedProblems bounds the problems an import refusal or a cleanup failure names.
const MaxListedProblems = 10

// Import verifies every sstable in req.Dir (sstable.Verify, extended: every row) and, only when
// all are clean, installs copies into the table's directory under fresh generations, each
// atomically (fsx.Install, TOC last). The source directory is left as is. It needs no ring.
func (l *Local) Import(ctx context.Context, o *Op, req ImportRequest) error {
	live, err := catalog.ListLive(req.Dir)
	if err != nil {
		return err
	}
	if len(live) == 0 {
		return fmt.Errorf("import: no sstables (with a TOC.txt) in %s", req.Dir)
	}
	var problems []string
	parts := make([]int64, len(live))
	for i, s := range live {
		if err := ctx.Err(); err != nil {
			return err
		}
		rep, err := sstable.Verify(s.Desc.Prefix(), sstable.VerifyOptions{Extended: true})
		if err != nil {
			return err
		}
		parts[i] = rep.Partitions - rep.Fillers
		for _, p := range rep.Problems {
			problems = append(problems, s.Desc.Prefix()+": "+p.String())
		}
	}
	if len(problems) > 0 {
		more := ""
		if len(problems) > MaxListedProblems {
			more = fmt.Sprintf(" (and %d more)", len(problems)-MaxListedProblems)
			problems = problems[:MaxListedProblems]
		}
		return fmt.Errorf("%w: %d problem(s): %s%s", ErrImportRefused, len(problems), strings.Join(problems, "; "), more)
	}
	id := ""
	if _, table, tid, ok := descriptor.TableDir(req.Dir); ok && table == req.Table {
		id = tid
	}
	dir, err := l.TableDirFor(req.Keyspace, req.Table, id)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	lk := l.Lock(dir)
	lk.Lock()
	defer lk.Unlock()
	if _, err := fsx.CleanLeftovers(dir); err != nil {
		return err
	}
	for i, s := range live {
		d, err := copySSTable(s, dir)
		if err != nil {
			return fmt.Errorf("installing %s: %w", s.Desc.Prefix(), err)
		}
		o.Update(func(st *OpStatus) {
			st.Imported = append(st.Imported, ImportedSSTable{Source: s.Desc.Prefix(), SSTable: d.Prefix(), Partitions: parts[i]})
		})
	}
	return nil
}

// copySSTable installs a copy of s into dir under the next free generation.
func copySSTable(s catalog.LiveSSTable, dir string) (descriptor.Descriptor, error) {
	var first *os.File
	in, d, err := generation.Install(dir, s.Desc.Version, func(in *fsx.Install, d descriptor.Descriptor) error {
		var err error
		first, err = in.Create(d.Filename(s.Comps[0]))
		return err
	})
	if err != nil {
		return d, err
	}
	defer in.Abort()
	for i, c := range s.Comps {
		dst := first
		if i > 0 {
			if dst, err = in.Create(d.Filename(c)); err != nil {
				return d, err
			}
		}
		src, err := os.Open(s.Desc.Path(c))
		if err != nil {
			return d, err
		}
		_, err = io.Copy(dst, src)
		src.Close()
		if err != nil {
			return d, err
		}
	}
	return d, in.Commit()
}
