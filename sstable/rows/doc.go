// Package rows owns the partition, row and cell codec of Data.db's uncompressed byte stream:
// a Cursor that walks one partition without allocating, and a Writer that serializes
// partitions byte-for-byte as Cassandra's SortedTablePartitionWriter and UnfilteredSerializer
// do. Both are driven by the SerializationHeader alone (schema.Table), never a CQL schema.
//
// The layout is shared by BIG md, me, nb, nc, oa and BTI da; only the partition-level
// DeletionTime differs between versions. Inside rows, timestamps, local deletion times and
// TTLs are uvint deltas against the header's EncodingStats.
//
//	partition    u16 keyLength, key
//	             DeletionTime            < oa: i32 localDeletionTime, i64 markedForDeleteAt
//	                                     (LIVE = 7fffffff 8000000000000000); oa, da: the byte
//	                                     0x80 for LIVE, else i64 markedForDeleteAt (sign bit 0),
//	                                     u32 localDeletionTime
//	             [static row]            iff the header has static columns (possibly empty)
//	             unfiltered*             rows and range tombstone markers, clustering order
//	             u8 0x01                 end of partition
//
//	flags        0x01 END_OF_PARTITION  0x02 IS_MARKER        0x04 HAS_TIMESTAMP  0x08 HAS_TTL
//	             0x10 HAS_DELETION      0x20 HAS_ALL_COLUMNS  0x40 HAS_COMPLEX_DELETION
//	             0x80 EXTENSION: an extended flags byte follows
//	extended     0x01 IS_STATIC  0x02 HAS_SHADOWABLE_DELETION
//
//	row          u8 flags, [u8 extended]
//	             clustering              not for the static row
//	             uvint size              bytes from after this vint to the end of the row
//	             uvint previousSize      static row: 0; else this start - previous start,
//	                                     the first unfiltered's own offset in the partition
//	             [uvint timestamp]       HAS_TIMESTAMP
//	             [uvint ttl, uvint ldt]  HAS_TTL (with HAS_TIMESTAMP): primary key liveness
//	             [uvint mfda, uvint ldt] HAS_DELETION
//	             [uvint columns subset]  unless HAS_ALL_COLUMNS
//	             per present column, in header order:
//	               simple:  cell
//	               complex: [uvint mfda, uvint ldt]  every complex column if HAS_COMPLEX_DELETION
//	                        uvint n, n cells
//
//	clustering   per 32 values a uvint header, 2 bits per value (bit 2i: empty, 2i+1: null),
//	             then every other value: raw if its type is fixed-width, else uvint length + bytes
//
//	columns      superset of n columns (Columns.Serializer.serializeSubset):
//	subset       n < 64: a bitmap with bit i set when column i is missing
//	             n >= 64: uvint missing count, then the present indexes if fewer than n/2
//	             are present, else the missing ones, each a uvint
//
//	marker       u8 0x02, u8 kind, u16 count, clustering (count values, a prefix)
//	             uvint size, uvint previousSize
//	             bound: uvint mfda, uvint ldt; boundary: the closing deletion, the opening one
//	             kinds: 0 EXCL_END_BOUND, 1 INCL_START_BOUND, 2 EXCL_END_INCL_START_BOUNDARY,
//	             5 INCL_END_EXCL_START_BOUNDARY, 6 INCL_END_BOUND, 7 EXCL_START_BOUND
//
//	cell         u8 flags  0x01 IS_DELETED  0x02 IS_EXPIRING  0x04 HAS_EMPTY_VALUE
//	                       0x08 USE_ROW_TIMESTAMP  0x10 USE_ROW_TTL
//	             [uvint timestamp]       unless USE_ROW_TIMESTAMP
//	             [uvint ldt]             if IS_DELETED or IS_EXPIRING, unless USE_ROW_TTL
//	             [uvint ttl]             if IS_EXPIRING, unless USE_ROW_TTL
//	             [uvint length, path]    complex columns: the CellPath
//	             [value]                 unless HAS_EMPTY_VALUE: raw if fixed-width, else
//	                                     uvint length + bytes
//
//	deltas       timestamp = minTimestamp + uvint (64-bit wrap)
//	             ldt = minLocalDeletionTime + int32(uvint), ttl = minTTL + int32(uvint); the
//	             32-bit deltas are written sign-extended and must read back as an int
//
// A Writer fed what a Cursor decoded reproduces the partition exactly; that holds for every
// partition of every fixture. The package is pure code: it imports the standard library,
// sstable/encoding, sstable/schema and sstable/version, and does no I/O.
package rows
