package stats

import (
	"bytes"

	"github.com/sluicedb/sluice/sstable/encoding"
	"github.com/sluicedb/sluice/sstable/schema"
)

// Validation is the VALIDATION component (ValidationMetadata): `writeUTF partitioner`, then
// `f64 bloomFilterFPChance`.
type Validation struct {
	Partitioner         string // class name, e.g. org.apache.cassandra.dht.Murmur3Partitioner
	BloomFilterFPChance float64
}

func parseValidation(r *encoding.Reader, body []byte) *Validation {
	start := r.Offset()
	name := r.UTF()
	if r.Err() == nil && !bytes.Equal(encoding.AppendUTF(nil, name), body[start:r.Offset()]) {
		r.Fail("partitioner name is not canonical modified UTF-8", ErrNonCanonical)
	}
	return &Validation{Partitioner: name, BloomFilterFPChance: readF64(r)}
}

func (c *Validation) append(b []byte) []byte {
	b = encoding.AppendUTF(b, c.Partitioner)
	return appendF64(b, c.BloomFilterFPChance)
}

// Compaction is the COMPACTION component (CompactionMetadata): `i32 length` and the
// serialised HyperLogLogPlus(13, 25) cardinality estimator of the partition keys.
type Compaction struct {
	Cardinality []byte
}

func parseCompaction(r *encoding.Reader) *Compaction {
	p := r.IntBytes()
	if p == nil {
		return &Compaction{}
	}
	return &Compaction{Cardinality: append([]byte{}, p...)}
}

func (c *Compaction) append(b []byte) []byte { return encoding.AppendIntBytes(b, c.Cardinality) }

// Epochs of EncodingStats (2015-09-22 00:00 GMT): the header stores its minimums as unsigned
// vint deltas from these.
const (
	TimestampEpoch    = 1442880000000000 // microseconds
	DeletionTimeEpoch = 1442880000       // seconds
	TTLEpoch          = 0
)

// parseHeader decodes the HEADER component (SerializationHeader.Serializer).
//
// The three EncodingStats deltas are unsigned vints written from signed values: 4.x writes
// writeUnsignedVInt(int delta) and 5.0 writeUnsignedVInt32((int)(ldt - epoch)), both of which
// sign-extend a negative delta to 64 bits. Adding the epoch back with 64-bit wrapping
// arithmetic therefore recovers the absolute value, and subtracting it re-creates the exact
// delta, so every encoding round-trips.
func parseHeader(r *encoding.Reader) *schema.Header {
	h := &schema.Header{}
	h.MinTimestamp = int64(readUVint(r)) + TimestampEpoch
	h.MinLocalDeletionTime = int64(readUVint(r)) + DeletionTimeEpoch
	h.MinTTL = int64(readUVint(r)) + TTLEpoch
	h.KeyType = string(readVintBytes(r))
	if n := readUVintCount(r, "clustering types", 1); n > 0 {
		h.ClusteringTypes = make([]string, n)
		for i := range h.ClusteringTypes {
			h.ClusteringTypes[i] = string(readVintBytes(r))
		}
	}
	h.StaticColumns = parseColumns(r, "static columns")
	h.RegularColumns = parseColumns(r, "regular columns")
	return h
}

func parseColumns(r *encoding.Reader, what string) []schema.Column {
	n := readUVintCount(r, what, 2)
	if n <= 0 {
		return nil
	}
	cols := make([]schema.Column, n)
	for i := range cols {
		cols[i].Name = readVintBytes(r)
		cols[i].Type = string(readVintBytes(r))
	}
	return cols
}

func appendHeader(b []byte, h *schema.Header) []byte {
	b = encoding.AppendUVint(b, uint64(h.MinTimestamp-TimestampEpoch))
	b = encoding.AppendUVint(b, uint64(h.MinLocalDeletionTime-DeletionTimeEpoch))
	b = encoding.AppendUVint(b, uint64(h.MinTTL-TTLEpoch))
	b = encoding.AppendVintBytes(b, []byte(h.KeyType))
	b = encoding.AppendUVint(b, uint64(len(h.ClusteringTypes)))
	for _, t := range h.ClusteringTypes {
		b = encoding.AppendVintBytes(b, []byte(t))
	}
	b = appendColumns(b, h.StaticColumns)
	return appendColumns(b, h.RegularColumns)
}

func appendColumns(b []byte, cols []schema.Column) []byte {
	b = encoding.AppendUVint(b, uint64(len(cols)))
	for _, c := range cols {
		b = encoding.AppendVintBytes(b, c.Name)
		b = encoding.AppendVintBytes(b, []byte(c.Type))
	}
	return b
}
