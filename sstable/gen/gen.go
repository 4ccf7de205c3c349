// Package gen generates Cassandra-valid sstables of a stress-like table, deterministically
// for a seed:
//
//	CREATE TABLE <ks>.<table> (
//	    pk    text,
//	    ck    text,
//	    value blob,
//	    PRIMARY KEY (pk, ck)
//	) WITH compression = {'class': 'LZ4Compressor', 'chunk_length_in_kb': 16};
//
// Partition keys are 16 hex characters derived from the seed, written in Murmur3 token order;
// each partition holds PartitionSize/RowSize rows with clustering keys r000000, r000001, …; each
// value is RowSize bytes less the row overhead, a Compressibility fraction of which repeats a
// pattern and the rest is random. It is the workload of the split and streaming benchmarks.
package gen

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/sluicedb/sluice/sstable"
	"github.com/sluicedb/sluice/sstable/descriptor"
	"github.com/sluicedb/sluice/sstable/rows"
	"github.com/sluicedb/sluice/sstable/schema"
	"github.com/sluicedb/sluice/sstable/stats"
	"github.com/sluicedb/sluice/sstable/token"
	"github.com/sluicedb/sluice/sstable/version"
)

// Options shapes the generated sstable. Zero values take the defaults in the field comments.
type Options struct {
	Version          version.Version // required
	Partitions       int64           // number of partitions; or derived from Size
	Size             int64           // target uncompressed data size, when Partitions is 0
	PartitionSize    int             // default 64 KiB
	RowSize          int             // default 4 KiB
	Compression      string          // "lz4" (default) or "none"
	ChunkLength      int             // default 16 KiB
	MinCompressRatio float64         // default 0: chunks are never stored raw
	Compressibility  float64         // fraction of each value that compresses, default 0.5
	IndexBlockSize   int             // row index granularity (column_index_size); default as Cassandra's
	Seed             uint64
	Keyspace, Table  string // default "sluice", "stress"
	// Progress, when set, is called after each partition with the partitions done and total.
	Progress func(done, total int64)
}

// Result describes the written sstable.
type Result struct {
	Desc       descriptor.Descriptor
	Partitions int64
	Rows       int64
}

const (
	marshal = "org.apache.cassandra.db.marshal."
	// baseTimestamp is the write time of the first row (2023-11-14, microseconds).
	baseTimestamp = 1_700_000_000_000_000
	// rowOverhead approximates the bytes a row adds around its value, so rows come out near
	// RowSize.
	rowOverhead = 24
)

// Header is the serialization header of the generated table.
func Header() *schema.Header {
	return &schema.Header{
		MinTimestamp:         baseTimestamp,
		MinLocalDeletionTime: stats.DeletionTimeEpoch,
		MinTTL:               stats.TTLEpoch,
		KeyType:              marshal + "UTF8Type",
		ClusteringTypes:      []string{marshal + "UTF8Type"},
		RegularColumns:       []schema.Column{{Name: []byte("value"), Type: marshal + "BytesType"}},
	}
}

func (o *Options) defaults() error {
	if o.PartitionSize == 0 {
		o.PartitionSize = 64 << 10
	}
	if o.RowSize == 0 {
		o.RowSize = 4 << 10
	}
	if o.Compression == "" {
		o.Compression = "lz4"
	}
	if o.Keyspace == "" {
		o.Keyspace = "sluice"
	}
	if o.Table == "" {
		o.Table = "stress"
	}
	if o.Compressibility == 0 {
		o.Compressibility = 0.5
	}
	switch {
	case o.RowSize <= rowOverhead:
		return fmt.Errorf("gen: row size %d must exceed %d bytes", o.RowSize, rowOverhead)
	case o.PartitionSize < o.RowSize:
		return fmt.Errorf("gen: partition size %d is smaller than the row size %d", o.PartitionSize, o.RowSize)
	case o.Compressibility < 0 || o.Compressibility > 1:
		return fmt.Errorf("gen: compressibility %v outside [0, 1]", o.Compressibility)
	case o.Compression != "lz4" && o.Compression != "none":
		return fmt.Errorf("gen: compression %q: want lz4 or none", o.Compression)
	}
	if o.Partitions == 0 && o.Size > 0 {
		o.Partitions = max(1, o.Size/int64(o.PartitionSize))
	}
	if o.Partitions <= 0 {
		return fmt.Errorf("gen: want a positive partition count or size")
	}
	return nil
}

// TableDir is the Cassandra data directory of the table under root: root/<ks>/<table>-<id>,
// with a table id derived from the names so that repeated runs agree.
func TableDir(root, keyspace, table string) string {
	sum := md5.Sum([]byte(keyspace + "." + table))
	return filepath.Join(root, keyspace, table+"-"+hex.EncodeToString(sum[:]))
}

// Keys returns the partition keys of a seed in the order they are written (Murmur3 order).
func Keys(seed uint64, n int64) [][]byte {
	type kt struct {
		key []byte
		tok int64
	}
	all := make([]kt, n)
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	seen := make(map[uint64]bool, n)
	for i := range all {
		v := rng.Uint64()
		for seen[v] {
			v = rng.Uint64()
		}
		seen[v] = true
		k := []byte(fmt.Sprintf("%016x", v))
		all[i] = kt{k, token.Murmur3.Token(k).Long}
	}
	slices.SortFunc(all, func(a, b kt) int {
		return token.CompareKeys(token.Token{Kind: token.KindMurmur3, Long: a.tok}, a.key, token.Token{Kind: token.KindMurmur3, Long: b.tok}, b.key)
	})
	out := make([][]byte, n)
	for i := range all {
		out[i] = all[i].key
	}
	return out
}

// Generate writes one sstable into TableDir(root, ks, table).
func Generate(ctx context.Context, root string, o Options) (Result, error) {
	if err := o.defaults(); err != nil {
		return Result{}, err
	}
	compressor := "LZ4Compressor"
	if o.Compression == "none" {
		compressor = ""
	}
	w, err := sstable.NewWriter(TableDir(root, o.Keyspace, o.Table), sstable.WriterOptions{
		Version:            o.Version,
		Partitioner:        token.Murmur3,
		Header:             Header(),
		Compressor:         compressor,
		ChunkLength:        o.ChunkLength,
		MinCompressRatio:   o.MinCompressRatio,
		IndexBlockSize:     o.IndexBlockSize,
		ExpectedPartitions: o.Partitions,
	})
	if err != nil {
		return Result{}, err
	}
	res, err := write(ctx, w, o)
	if err != nil {
		w.Abort()
		return Result{}, err
	}
	if res.Desc, err = w.Finish(); err != nil {
		return Result{}, err
	}
	return res, nil
}

func write(ctx context.Context, w *sstable.Writer, o Options) (Result, error) {
	var res Result
	rowsPer := o.PartitionSize / o.RowSize
	rg := NewRowGen(o.Seed, o.RowSize-rowOverhead, o.Compressibility)
	var row rows.Row
	for p, key := range Keys(o.Seed, o.Partitions) {
		if p%64 == 0 {
			if err := ctx.Err(); err != nil {
				return res, err
			}
		}
		if err := w.BeginPartition(key, rows.Live); err != nil {
			return res, err
		}
		for r := 0; r < rowsPer; r++ {
			rg.Row(&row, int64(p), r)
			if err := w.AppendRow(&row); err != nil {
				return res, err
			}
			res.Rows++
		}
		if err := w.EndPartition(); err != nil {
			return res, err
		}
		res.Partitions++
		if o.Progress != nil {
			o.Progress(res.Partitions, o.Partitions)
		}
	}
	return res, nil
}

// RowGen produces the rows of the workload into reusable storage: generating a row allocates
// nothing. Row p/r is the same for the same seed whatever was generated before it, so a reader
// can regenerate any row to compare.
//
// The compressible part of a value is a slice of a megabyte of random words from a small
// vocabulary, so LZ4 meets text-like data (matches at varying distances, about 2:1) rather
// than a repeated pattern it would skip through at memory speed.
type RowGen struct {
	seed   uint64
	text   []byte
	value  []byte
	ck     []byte
	cells  [1]rows.Cell
	cols   [1]rows.ColumnData
	clust  [1][]byte
	random int // bytes of each value that are random
	rng    *rand.PCG
}

// NewRowGen returns a generator of values of valueSize bytes.
func NewRowGen(seed uint64, valueSize int, compressibility float64) *RowGen {
	g := &RowGen{seed: seed, value: make([]byte, valueSize), ck: make([]byte, 0, 16), rng: rand.NewPCG(0, 0)}
	g.random = valueSize - int(float64(valueSize)*compressibility)
	g.text = wordText(seed, textSize+valueSize)
	return g
}

const textSize = 1 << 20

// wordText is n bytes of space-separated words drawn from a vocabulary of 256 words of 3 to 10
// letters.
func wordText(seed uint64, n int) []byte {
	rng := rand.New(rand.NewPCG(seed, 0x9a77e5))
	vocab := make([][]byte, 256)
	for i := range vocab {
		w := make([]byte, 3+rng.IntN(8))
		for j := range w {
			w[j] = 'a' + byte(rng.IntN(26))
		}
		vocab[i] = w
	}
	text := make([]byte, 0, n+16)
	for len(text) < n {
		text = append(text, vocab[rng.IntN(len(vocab))]...)
		text = append(text, ' ')
	}
	return text[:n]
}

// Row fills row with row r of partition p. The row aliases g's buffers until the next call.
func (g *RowGen) Row(row *rows.Row, p int64, r int) {
	g.ck = append(g.ck[:0], 'r')
	g.ck = appendPadded(g.ck, r, 6)
	g.rng.Seed(g.seed^uint64(p)*0x9e3779b97f4a7c15, uint64(r))
	v := g.value
	i := 0
	for ; i+8 <= g.random; i += 8 {
		x := g.rng.Uint64()
		v[i], v[i+1], v[i+2], v[i+3] = byte(x), byte(x>>8), byte(x>>16), byte(x>>24)
		v[i+4], v[i+5], v[i+6], v[i+7] = byte(x>>32), byte(x>>40), byte(x>>48), byte(x>>56)
	}
	for ; i < g.random; i++ {
		v[i] = byte(g.rng.Uint64())
	}
	off := int(g.rng.Uint64() % textSize)
	copy(v[i:], g.text[off:])
	ts := int64(baseTimestamp) + p
	g.cells[0] = rows.Cell{Timestamp: ts, LocalDeletionTime: rows.NoDeletionTime, TTL: rows.NoTTL, Value: v}
	g.cols[0] = rows.ColumnData{Column: 0, Deletion: rows.Live, Cells: g.cells[:]}
	g.clust[0] = g.ck
	*row = rows.Row{
		Clustering: g.clust[:],
		Liveness:   rows.Liveness{Timestamp: ts, TTL: rows.NoTTL, LocalExpirationTime: rows.NoDeletionTime},
		Deletion:   rows.Live,
		Columns:    g.cols[:],
	}
}

// appendPadded appends v in decimal, zero-padded to width, without allocating.
func appendPadded(b []byte, v, width int) []byte {
	var tmp [20]byte
	s := strconv.AppendInt(tmp[:0], int64(v), 10)
	for i := len(s); i < width; i++ {
		b = append(b, '0')
	}
	return append(b, s...)
}
