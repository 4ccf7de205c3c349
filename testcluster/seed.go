package testcluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/sluicedb/sluice/internal/repair"
	"github.com/sluicedb/sluice/membership/ring"
	"github.com/sluicedb/sluice/sstable"
	"github.com/sluicedb/sluice/sstable/gen"
	"github.com/sluicedb/sluice/sstable/rows"
	"github.com/sluicedb/sluice/sstable/token"
	"github.com/sluicedb/sluice/sstable/version"
)

// SeedData is the generated data set and the reference every replica is checked against.
//
// The workload is a history of S flushes. Flush 1 writes every row of every partition; each
// later flush g touches about half of the partitions: it overwrites about a quarter of their
// rows with new values, deletes another quarter (row tombstones), inserts one new row, and
// for one touched partition in sixteen deletes the whole partition instead. Every write of
// flush g has timestamp base+g, so later flushes win. Each initial node gets one sstable per
// flush holding the partitions it replicates: S sstables spanning all its ranges, overlapping
// in keys, as a node that flushed S memtables has.
//
// The reference is what a compaction of the whole history would write: one sstable in
// Dir/seed holding each partition once, with only the newest version of each row, the newest
// row and partition deletions, and nothing they shadow. It is written from the model, not by
// merging the flushes, so comparing a replica's reconciled content with it checks the
// flushes, the streaming and the reconciliation independently.
type SeedData struct {
	Keys [][]byte
	// Ref holds per key the reconciled hash (repair.Hasher) of the reference partition and
	// the bytes a compacted copy of it takes on disk.
	Ref map[string]RefPartition
	// Reference is the reference sstable's Data.db path.
	Reference string
	// Flushes is per key the number of flushes that wrote it: the most copies of it one
	// replica holds unless something was installed twice.
	Flushes map[string]int
	// BytesOnDisk is the Data.db bytes seeded into every initial node together.
	BytesOnDisk int64
}

// RefPartition is one reference partition.
type RefPartition struct {
	Hash uint64
	// Bytes is its on-disk (compressed) size in a compacted sstable: its uncompressed length
	// scaled by the reference sstable's compression ratio.
	Bytes int64
}

// Workload constants: timestamps in microseconds, deletion times in seconds.
const (
	baseTimestamp = 1_700_000_000_000_000
	flushStep     = 1_000_000 // between two flushes' timestamps
	baseDeletion  = 1_700_000_000
	rowOverhead   = 24 // the bytes a row adds around its value (gen's estimate)
)

// workload is the deterministic model of the flushes.
type workload struct {
	seed     uint64
	flushes  int
	rowsPer  int
	rowSize  int
	generate []*gen.RowGen // per flush, values of that flush
}

func newWorkload(seed uint64, flushes, partitionSize, rowSize int) *workload {
	w := &workload{seed: seed, flushes: flushes, rowsPer: max(1, partitionSize/rowSize), rowSize: rowSize}
	for g := 0; g <= flushes; g++ {
		w.generate = append(w.generate, gen.NewRowGen(seed+uint64(g)*0x9e37, rowSize-rowOverhead, 0.5))
	}
	return w
}

func ts(g int) int64 { return baseTimestamp + int64(g)*flushStep }

func deletionAt(g int) rows.DeletionTime {
	return rows.DeletionTime{MarkedForDeleteAt: ts(g), LocalDeletionTime: baseDeletion + int64(g)}
}

// mix is splitmix64 over the arguments: the workload's coin.
func (w *workload) mix(vs ...uint64) uint64 {
	x := w.seed
	for _, v := range vs {
		x ^= v + 0x9e3779b97f4a7c15 + (x << 6) + (x >> 2)
		x += 0x9e3779b97f4a7c15
		z := x
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
		z = (z ^ (z >> 27)) * 0x94d049bb133111eb
		x = z ^ (z >> 31)
	}
	return x
}

// Row events of a flush.
const (
	evNone = iota
	evWrite
	evDelete
)

// touched reports whether flush g writes partition p, and whether it deletes it whole.
func (w *workload) touched(p, g int) (touched, partitionDeleted bool) {
	if g == 1 {
		return true, false
	}
	h := w.mix(uint64(p), uint64(g), 1)
	return h%2 == 0, h%32 == 0
}

// event is what flush g does to row r of partition p (p touched, not deleted whole). Row
// indexes at or past rowsPer are the rows inserted by later flushes, one per flush.
func (w *workload) event(p, g, r int) int {
	if g == 1 {
		if r < w.rowsPer {
			return evWrite
		}
		return evNone
	}
	if r >= w.rowsPer {
		if r == w.rowsPer+g-2 {
			return evWrite
		}
		return evNone
	}
	switch w.mix(uint64(p), uint64(g), uint64(r), 2) % 4 {
	case 0:
		return evWrite
	case 1:
		return evDelete
	}
	return evNone
}

// rowCount is the row indexes any flush may write.
func (w *workload) rowCount() int { return w.rowsPer + max(0, w.flushes-1) }

// liveRow fills row with row r of partition p as flush g writes it.
func (w *workload) liveRow(row *rows.Row, p, g, r int) {
	w.generate[g].Row(row, int64(p), r)
	t := ts(g)
	row.Liveness.Timestamp = t
	for i := range row.Columns {
		for j := range row.Columns[i].Cells {
			row.Columns[i].Cells[j].Timestamp = t
		}
	}
}

// writeFlush writes partition p as flush g has it; ok false when the flush does not touch it.
func (w *workload) writeFlush(wr *sstable.Writer, key []byte, p, g int) error {
	touched, deleted := w.touched(p, g)
	if !touched {
		return nil
	}
	pd := rows.Live
	if deleted {
		pd = deletionAt(g)
	}
	if err := wr.BeginPartition(key, pd); err != nil {
		return err
	}
	if !deleted {
		var row rows.Row
		for r := range w.rowCount() {
			switch w.event(p, g, r) {
			case evWrite:
				w.liveRow(&row, p, g, r)
			case evDelete:
				w.deadRow(&row, r, g)
			default:
				continue
			}
			if err := wr.AppendRow(&row); err != nil {
				return err
			}
		}
	}
	return wr.EndPartition()
}

// deadRow fills row with a row tombstone of row r at flush g.
func (w *workload) deadRow(row *rows.Row, r, g int) {
	*row = rows.Row{Clustering: [][]byte{clusteringOf(r)}, Liveness: rows.EmptyLiveness, Deletion: deletionAt(g)}
}

// clusteringOf is gen's clustering of row r: "r" and six digits.
func clusteringOf(r int) []byte { return []byte(fmt.Sprintf("r%06d", r)) }

// writeCompacted writes partition p as a compaction of every flush leaves it: the newest
// partition deletion; per row, the newest row deletion not shadowed by it and the newest
// write newer than both.
func (w *workload) writeCompacted(wr *sstable.Writer, key []byte, p int) error {
	partDel := 0
	lastWrite := make([]int, w.rowCount())
	lastDelete := make([]int, w.rowCount())
	for g := 1; g <= w.flushes; g++ {
		touched, deleted := w.touched(p, g)
		if !touched {
			continue
		}
		if deleted {
			partDel = g
			continue
		}
		for r := range w.rowCount() {
			switch w.event(p, g, r) {
			case evWrite:
				lastWrite[r] = g
			case evDelete:
				lastDelete[r] = g
			}
		}
	}
	pd := rows.Live
	if partDel > 0 {
		pd = deletionAt(partDel)
	}
	if err := wr.BeginPartition(key, pd); err != nil {
		return err
	}
	var row rows.Row
	for r := range w.rowCount() {
		del := lastDelete[r]
		if del <= partDel {
			del = 0
		}
		live := lastWrite[r]
		if live <= partDel || live <= del {
			live = 0
		}
		switch {
		case live > 0:
			w.liveRow(&row, p, live, r)
			if del > 0 {
				row.Deletion = deletionAt(del)
			}
		case del > 0:
			w.deadRow(&row, r, del)
		default:
			continue
		}
		if err := wr.AppendRow(&row); err != nil {
			return err
		}
	}
	return wr.EndPartition()
}

// seedData writes every initial node's flushes for the ranges it replicates on r (all ranges
// with SeedEverywhere; less for SeedMissing and SeedStale) and the reference, then hashes
// the reference.
func (c *Cluster) seedData(ctx context.Context, r ring.Ring, dirs map[string]string) (*SeedData, error) {
	o := c.opts
	partitionSize, rowSize, chunk := 64<<10, 4<<10, 0
	if o.DataPerNode < 64<<20 {
		// Small data sets: more, smaller partitions, so every range holds some.
		partitionSize, rowSize, chunk = 8<<10, 1<<10, 4<<10
	}
	// Each writing job has its own workload: row generators reuse their buffers.
	newW := func() *workload { return newWorkload(o.Seed, o.SSTables, partitionSize, rowSize) }
	w := newW()
	s := c.strategy
	if o.SeedEverywhere {
		s = ring.SimpleStrategy{RF: o.Nodes}
	}
	replicasPerKey := 0.0
	for _, v := range ring.Ownership(r, s) {
		replicasPerKey += v
	}
	// A partition's flushes add up to about 1 + (S-1)/2 * (1/4 + 1/rowsPer) of its first
	// version.
	growth := 1 + float64(o.SSTables-1)/2*(0.25+1/float64(w.rowsPer))
	partitions := int64(float64(o.DataPerNode) * float64(o.Nodes) / max(replicasPerKey, 1) / (float64(partitionSize) * growth))
	keys := gen.Keys(o.Seed, max(partitions, 1))

	v, err := version.ParseWritable("oa")
	if err != nil {
		return nil, err
	}
	newWriter := func(root string) (*sstable.Writer, error) {
		return sstable.NewWriter(gen.TableDir(root, o.Keyspace, o.Table), sstable.WriterOptions{
			Version: v, Partitioner: token.Murmur3, Header: gen.Header(), Compressor: "LZ4Compressor",
			ChunkLength: chunk, ExpectedPartitions: int64(len(keys)),
		})
	}
	// Which keys each node holds, in each flush.
	type holder struct {
		name  string
		keep  func(k int, g int) bool
		bytes int64
	}
	tokens := make([]token.Token, len(keys))
	for i, k := range keys {
		tokens[i] = token.Murmur3.Token(k)
	}
	var holders []*holder
	for name := range dirs {
		rs := ring.ReplicaRanges(r, s, name)
		// Every other vnode range the node replicates is damaged (SeedMissing, SeedStale).
		var damaged token.RangeSet
		i := 0
		for _, rr := range ring.RangeOwners(r, s) {
			if slices.ContainsFunc(rr.Replicas, func(n ring.Node) bool { return n.Name == name }) {
				if i%2 == 0 {
					damaged = append(damaged, rr.Range)
				}
				i++
			}
		}
		h := &holder{name: name}
		h.keep = func(k, g int) bool {
			if !rs.Contains(tokens[k]) {
				return false
			}
			switch {
			case name == o.SeedMissing:
				return !damaged.Contains(tokens[k])
			case name == o.SeedStale && g == o.SSTables:
				return !damaged.Contains(tokens[k])
			}
			return true
		}
		holders = append(holders, h)
	}
	src := filepath.Join(c.dir, "seed")
	if err := os.RemoveAll(src); err != nil {
		return nil, err
	}
	jobs := make(chan func() error)
	errs := make(chan error, len(holders)+1)
	var wg sync.WaitGroup
	for range 2 { // two cores
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				if err := j(); err != nil {
					errs <- err
				}
			}
		}()
	}
	var refPath string
	jobs <- func() error {
		w := newW()
		wr, err := newWriter(src)
		if err != nil {
			return err
		}
		for p, key := range keys {
			if err := w.writeCompacted(wr, key, p); err != nil {
				wr.Abort()
				return fmt.Errorf("reference: %w", err)
			}
		}
		d, err := wr.Finish()
		refPath = d.Path("Data.db")
		return err
	}
	for _, h := range holders {
		jobs <- func() error {
			w := newW()
			for g := 1; g <= o.SSTables; g++ {
				if err := ctx.Err(); err != nil {
					return err
				}
				wr, err := newWriter(dirs[h.name])
				if err != nil {
					return err
				}
				written := 0
				for p, key := range keys {
					if !h.keep(p, g) {
						continue
					}
					if touched, _ := w.touched(p, g); touched {
						written++
					}
					if err := w.writeFlush(wr, key, p, g); err != nil {
						wr.Abort()
						return fmt.Errorf("seeding %s: %w", h.name, err)
					}
				}
				if written == 0 {
					wr.Abort()
					continue
				}
				d, err := wr.Finish()
				if err != nil {
					return fmt.Errorf("seeding %s: %w", h.name, err)
				}
				if st, err := os.Stat(d.Path("Data.db")); err == nil {
					h.bytes += st.Size()
				}
			}
			return nil
		}
	}
	close(jobs)
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return nil, err
	}
	sd := &SeedData{Keys: keys, Reference: refPath, Ref: make(map[string]RefPartition, len(keys)), Flushes: make(map[string]int, len(keys))}
	for p, k := range keys {
		for g := 1; g <= o.SSTables; g++ {
			if touched, _ := w.touched(p, g); touched {
				sd.Flushes[string(k)]++
			}
		}
	}
	for _, h := range holders {
		sd.BytesOnDisk += h.bytes
	}
	ref, err := sstable.Open(refPath)
	if err != nil {
		return nil, err
	}
	defer ref.Close()
	ratio := compressionRatio(ref)
	err = repair.Walk(ctx, []*sstable.Table{ref}, nil, func(p *repair.Partition) error {
		sd.Ref[string(p.Key)] = RefPartition{Hash: p.Hash, Bytes: int64(float64(p.Bytes[0]) * ratio)}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reference %s: %w", refPath, err)
	}
	if len(sd.Ref) != len(keys) {
		return nil, fmt.Errorf("reference %s holds %d partitions, want %d", refPath, len(sd.Ref), len(keys))
	}
	return sd, nil
}

// compressionRatio is Data.db's bytes on disk per uncompressed byte.
func compressionRatio(t *sstable.Table) float64 {
	if t.DataLength() == 0 {
		return 1
	}
	return float64(t.DataFileLength) / float64(t.DataLength())
}
