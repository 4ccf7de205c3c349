// Package generation allocates sstable generations in a directory: the one way every writer
// of sluice (the sstable Writer, split, stream receivers, node import) picks the number its
// files carry, so that no two of them ever pick the same one.
//
// Within a process a per-directory lock covers choosing a generation and creating the first
// file that carries it; descriptor.NextGeneration counts temporary files, so once that file
// exists nobody in this process picks the number again, and nobody waits for another's
// transfer. Against other processes (Cassandra, another sluice), a final name that appeared
// meanwhile (fs.ErrExist from Install.Create) moves on to a later generation.
package generation

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/sluicedb/sluice/internal/lib/fsx"
	"github.com/sluicedb/sluice/sstable/descriptor"
	"github.com/sluicedb/sluice/sstable/version"
)

// attempts bounds the retries when other processes keep taking generations.
const attempts = 8

var locks sync.Map // cleaned directory -> *sync.Mutex

func lock(dir string) func() {
	mu, _ := locks.LoadOrStore(filepath.Clean(dir), &sync.Mutex{})
	mu.(*sync.Mutex).Lock()
	return mu.(*sync.Mutex).Unlock
}

// Install starts an fsx.Install of a new generation of version v in dir and runs create,
// which must create at least one of its files, under the directory's lock. The caller writes
// the rest and commits or aborts the install.
func Install(dir string, v version.Version, create func(*fsx.Install, descriptor.Descriptor) error) (*fsx.Install, descriptor.Descriptor, error) {
	unlock := lock(dir)
	defer unlock()
	floor := 0
	for attempt := 0; ; attempt++ {
		gen, err := descriptor.NextGeneration(dir)
		if err != nil {
			return nil, descriptor.Descriptor{}, err
		}
		gen = max(gen, floor)
		d := descriptor.Descriptor{Dir: dir, Version: v, ID: strconv.Itoa(gen)}
		inst, err := fsx.NewInstall(dir, d.Filename(descriptor.TOC))
		if err != nil {
			return nil, d, err
		}
		if err = create(inst, d); err == nil {
			return inst, d, nil
		}
		_ = inst.Abort()
		if !errors.Is(err, fs.ErrExist) {
			return nil, d, err
		}
		if attempt == attempts {
			return nil, d, fmt.Errorf("no free generation in %s after %d attempts: %w", dir, attempts, err)
		}
		floor = gen + 1
	}
}
