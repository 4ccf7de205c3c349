package generation

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/sluicedb/sluice/internal/lib/fsx"
	"github.com/sluicedb/sluice/sstable/descriptor"
	"github.com/sluicedb/sluice/sstable/version"
)

// Concurrent writers in one directory get distinct generations, above any already on disk.
func TestInstallHandsOutDistinctGenerations(t *testing.T) {
	dir := t.TempDir()
	v, _ := version.ParseWritable("oa")
	// Another writer's sstable already holds generation 1.
	if err := os.WriteFile(filepath.Join(dir, "oa-1-big-Data.db"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	seen := map[string]bool{}
	var insts []*fsx.Install
	defer func() {
		for _, in := range insts {
			in.Abort()
		}
	}()
	var wg sync.WaitGroup
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			inst, d, err := Install(dir, v, func(inst *fsx.Install, d descriptor.Descriptor) error {
				_, err := inst.Create(d.Filename(descriptor.Data))
				return err
			})
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			insts = append(insts, inst) // held open: an aborted generation may be reused
			if seen[d.ID] || d.ID == "1" {
				t.Errorf("generation %s handed out twice", d.ID)
			}
			seen[d.ID] = true
		}()
	}
	wg.Wait()
	if len(seen) != 16 {
		t.Errorf("%d distinct generations, want 16", len(seen))
	}
}
