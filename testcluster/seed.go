package testcluster

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"

	"github.com/sluicedb/sluice/membership/ring"
	"github.com/sluicedb/sluice/sstable"
	"github.com/sluicedb/sluice/sstable/gen"
	"github.com/sluicedb/sluice/sstable/slice"
	"github.com/sluicedb/sluice/sstable/token"
	"github.com/sluicedb/sluice/sstable/version"
)

// SeedData is the generated data set: every partition's key and the digest of its bytes in
// the parent sstable, the reference the check compares every replica against.
type SeedData struct {
	Keys   [][]byte
	Digest map[string]PartitionDigest
	// Parent is the generated sstable's Data.db path.
	Parent string
}

// PartitionDigest is a partition's uncompressed length and SHA-256 in the parent.
type PartitionDigest struct {
	Length int64
	Sum    [32]byte
}

// seedData generates one sstable holding DataPerNode*Nodes/RF bytes (so that each node holds
// about DataPerNode at RF) and splits it zero-copy into every node's data directory by the
// ranges it replicates on r (all ranges with SeedEverywhere).
func (c *Cluster) seedData(ctx context.Context, r ring.Ring, dirs map[string]string) (*SeedData, error) {
	v, err := version.ParseWritable("oa")
	if err != nil {
		return nil, err
	}
	total := c.opts.DataPerNode * int64(c.opts.Nodes) / int64(min(c.opts.RF, c.opts.Nodes))
	o := gen.Options{Version: v, Size: total, Seed: c.opts.Seed, Keyspace: c.opts.Keyspace, Table: c.opts.Table}
	if c.opts.DataPerNode < 64<<20 {
		// Small data sets: more, smaller partitions, so every range holds some.
		o.PartitionSize, o.RowSize, o.ChunkLength = 8<<10, 1<<10, 4<<10
	}
	src := filepath.Join(c.dir, "seed")
	if err := os.RemoveAll(src); err != nil {
		return nil, err
	}
	res, err := gen.Generate(ctx, src, o)
	if err != nil {
		return nil, err
	}
	parent, err := sstable.Open(res.Desc.Prefix())
	if err != nil {
		return nil, err
	}
	defer parent.Close()
	sd, err := digestParent(parent)
	if err != nil {
		return nil, err
	}
	sd.Parent = res.Desc.Path("Data.db")
	s := ring.Strategy(ring.SimpleStrategy{RF: c.opts.RF})
	if c.opts.SeedEverywhere {
		s = ring.SimpleStrategy{RF: c.opts.Nodes}
	}
	for name, dir := range dirs {
		rs := ring.ReplicaRanges(r, s, name)
		if name == c.opts.SeedMissing {
			var half token.RangeSet
			for i, rg := range rs {
				if i%2 == 0 {
					half = append(half, rg)
				}
			}
			rs = half
		}
		if _, err := slice.Split(ctx, parent, rs, gen.TableDir(dir, c.opts.Keyspace, c.opts.Table), slice.Options{}); err != nil {
			return nil, fmt.Errorf("seeding %s: %w", name, err)
		}
	}
	return sd, nil
}

// digestParent reads every partition of the parent: a partition ends where the next begins,
// the last at the end of Data.db.
func digestParent(t *sstable.Table) (*SeedData, error) {
	type ent struct {
		key []byte
		pos int64
	}
	var ents []ent
	err := t.ScanPartitions(func(p *sstable.Partition) error {
		ents = append(ents, ent{append([]byte(nil), p.Key...), p.Position})
		return nil
	})
	if err != nil {
		return nil, err
	}
	sd := &SeedData{Digest: make(map[string]PartitionDigest, len(ents))}
	var buf []byte
	for i, e := range ents {
		end := t.DataLength()
		if i+1 < len(ents) {
			end = ents[i+1].pos
		}
		n := end - e.pos
		if int64(cap(buf)) < n {
			buf = make([]byte, n)
		}
		if _, err := t.Data.ReadAt(buf[:n], e.pos); err != nil {
			return nil, fmt.Errorf("parent partition %x: %w", e.key, err)
		}
		sd.Keys = append(sd.Keys, e.key)
		sd.Digest[string(e.key)] = PartitionDigest{Length: n, Sum: sha256.Sum256(buf[:n])}
	}
	return sd, nil
}
