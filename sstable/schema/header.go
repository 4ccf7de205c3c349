package schema

// Header is the SerializationHeader component of Statistics.db. The codec lives in
// sstable/stats; the row codec compiles a Header into a Table.
//
// Encoding stats are stored absolute (the epochs already added back). They are the base of the
// delta-encoded timestamps, deletion times and TTLs inside Data.db rows, so a Header copied to a
// child sstable must be copied exactly: tightening it silently corrupts rows.
type Header struct {
	MinTimestamp         int64
	MinLocalDeletionTime int64
	MinTTL               int64

	KeyType         string   // e.g. "org.apache.cassandra.db.marshal.UTF8Type"
	ClusteringTypes []string // in clustering order; may contain ReversedType(...)
	StaticColumns   []Column // in the order stored
	RegularColumns  []Column // in the order stored
}

// Column is one column of the header: its name bytes (UTF-8 of the CQL name) and marshal type.
type Column struct {
	Name []byte
	Type string
}
