package wire

// Run is one contiguous piece of the source Data.db copied into a child: chunks
// FirstChunk..FirstChunk+ChunkCount-1 of the source (compressed; for an uncompressed source
// the CRC.db chunks it touches), occupying Length bytes at FileOffset in the child Data.db;
// ParentOffset is where those bytes start in the source's uncompressed data (what an
// uncompressed child needs to map positions; a compressed one derives it from FirstChunk).
type Run struct {
	FirstChunk   uint64
	ChunkCount   uint64
	FileOffset   uint64
	Length       uint64
	ParentOffset uint64
}

// Span is one run of a partial child in the source's uncompressed positions: from its first
// partition's start to its last partition's end, exactly. Lo and Hi lie inside the Run that
// carries them.
type Span struct {
	Lo, Hi uint64
}

// ComponentSpec names a component sent whole (Data.Stream == StreamComponent addresses it
// by its index in Manifest.Components) and its length in bytes.
type ComponentSpec struct {
	Name   string
	Length uint64
}

// Manifest describes one sstable before its bytes are sent: enough for the receiver to
// allocate, place and verify every Data frame and to rebuild what is not sent.
type Manifest struct {
	SSTableID      string
	Version        string // sstable format version, e.g. "nb"
	Format         string // "big" or "bti"
	Kind           Kind
	DataLength     uint64 // uncompressed length of the child's data
	DataFileLength uint64 // length of the child Data.db file
	ChunkLength    uint32
	// Compression is the child's CompressionInfo.db (or CRC.db for an uncompressed
	// table) as the sender rebased it onto the child's chunk offsets; opaque here.
	Compression      []byte
	Runs             []Run
	Components       []ComponentSpec
	IndexSliceLength uint64
	Partitions       uint64
	Statistics       []byte // opaque Statistics.db bytes
	Digest           uint32 // Digest.crc32 of the child Data.db
	// DeadBytes is what the sender's layout left dead in a partial child's data: bytes of the
	// parent's chunks no partition of the child occupies (informational: shown to operators).
	DeadBytes uint64
	// IndexFormat is how the index slice encodes its partitions (IndexRecords; IndexBig, the
	// parent's Index.db entries verbatim, sent only to a receiver whose Hello offers
	// FeatureIndexBig; IndexPositions, only to one offering FeatureIndexPositions).
	IndexFormat IndexFormat
	// Spans are a compressed partial's runs of partitions, exactly (Span), sent only to a
	// receiver whose Hello offers FeatureFillInPlace: it then writes the filled child as the
	// runs arrive instead of filling a received copy.
	Spans []Span
}

// IndexFormat is the encoding of a partial's index slice.
type IndexFormat uint8

const (
	// IndexRecords: one record per partition (key, parent position, rows-slice position,
	// promoted index).
	IndexRecords IndexFormat = 0
	// IndexBig: a BIG parent's Index.db entries as they are on disk, run after run.
	IndexBig IndexFormat = 1
	// IndexPositions: a compressed BTI parent's partitions without their keys, one record per
	// partition (the parent position's increase over the record before, the rows-slice
	// position); the receiver reads each key from the Data.db it received.
	IndexPositions IndexFormat = 2
)

// FeatureIndexBig, in a receiver's Hello.Features, says it rebuilds from IndexBig slices.
const FeatureIndexBig = "index-slice-big"

// FeatureIndexPositions, in a receiver's Hello.Features, says it rebuilds a BTI partial from
// IndexPositions slices.
const FeatureIndexPositions = "index-slice-positions"

// FeatureFillInPlace, in a receiver's Hello.Features, says it fills a compressed partial as
// its runs arrive, from the Manifest's Spans.
const FeatureFillInPlace = "fill-in-place"

const (
	manifestSSTableID        = 1
	manifestVersion          = 2
	manifestFormat           = 3
	manifestKind             = 4
	manifestDataLength       = 5
	manifestDataFileLength   = 6
	manifestChunkLength      = 7
	manifestCompression      = 8
	manifestRuns             = 9
	manifestComponents       = 10
	manifestIndexSliceLength = 11
	manifestPartitions       = 12
	manifestStatistics       = 13
	manifestDigest           = 14
	manifestDeadBytes        = 15
	manifestIndexFormat      = 16
	manifestSpans            = 17

	runFirstChunk = 1
	runChunkCount = 2
	runFileOffset = 3
	runLength     = 4
	runParent     = 5

	componentName   = 1
	componentLength = 2

	spanLo = 1
	spanHi = 2
)

var manifestSchema = schema{
	name: "Manifest",
	fields: []string{
		manifestSSTableID:        "SSTableID",
		manifestVersion:          "Version",
		manifestFormat:           "Format",
		manifestKind:             "Kind",
		manifestDataLength:       "DataLength",
		manifestDataFileLength:   "DataFileLength",
		manifestChunkLength:      "ChunkLength",
		manifestCompression:      "Compression",
		manifestRuns:             "Runs",
		manifestComponents:       "Components",
		manifestIndexSliceLength: "IndexSliceLength",
		manifestPartitions:       "Partitions",
		manifestStatistics:       "Statistics",
		manifestDigest:           "Digest",
		manifestDeadBytes:        "DeadBytes",
		manifestIndexFormat:      "IndexFormat",
		manifestSpans:            "Spans",
	},
	repeated: 1<<manifestRuns | 1<<manifestComponents | 1<<manifestSpans,
}

var spanSchema = schema{
	name:   "Span",
	fields: []string{spanLo: "Lo", spanHi: "Hi"},
}

var runSchema = schema{
	name: "Run",
	fields: []string{
		runFirstChunk: "FirstChunk",
		runChunkCount: "ChunkCount",
		runFileOffset: "FileOffset",
		runLength:     "Length",
		runParent:     "ParentOffset",
	},
}

var componentSchema = schema{
	name:   "ComponentSpec",
	fields: []string{componentName: "Name", componentLength: "Length"},
}

func (m *Manifest) Type() MsgType          { return MsgManifest }
func (m *Manifest) Length() int            { return frameLength(m) }
func (m *Manifest) Append(b []byte) []byte { return AppendMessage(b, m) }

func (m *Manifest) encode(w *writer) {
	w.string(manifestSSTableID, m.SSTableID)
	w.string(manifestVersion, m.Version)
	w.string(manifestFormat, m.Format)
	w.uint(manifestKind, uint64(m.Kind))
	w.uint(manifestDataLength, m.DataLength)
	w.uint(manifestDataFileLength, m.DataFileLength)
	w.uint(manifestChunkLength, uint64(m.ChunkLength))
	w.bytes(manifestCompression, m.Compression)
	for i := range m.Runs {
		w.group(manifestRuns, &m.Runs[i])
	}
	for i := range m.Components {
		w.group(manifestComponents, &m.Components[i])
	}
	w.uint(manifestIndexSliceLength, m.IndexSliceLength)
	w.uint(manifestPartitions, m.Partitions)
	w.bytes(manifestStatistics, m.Statistics)
	w.uint(manifestDigest, uint64(m.Digest))
	w.uint(manifestDeadBytes, m.DeadBytes)
	w.uint(manifestIndexFormat, uint64(m.IndexFormat))
	for i := range m.Spans {
		w.group(manifestSpans, &m.Spans[i])
	}
}

func (m *Manifest) decode(d *decoder) {
	if n := d.count(manifestRuns, d.lim.MaxRuns); n > 0 {
		m.Runs = make([]Run, 0, n)
	}
	if n := d.count(manifestComponents, d.lim.MaxComponents); n > 0 {
		m.Components = make([]ComponentSpec, 0, n)
	}
	if n := d.count(manifestSpans, d.lim.MaxRuns); n > 0 {
		m.Spans = make([]Span, 0, n)
	}
	// Opaque blobs are bounded only by the frame, which is already in memory.
	blob := len(d.body)
	for d.next() {
		switch d.tag {
		case manifestSSTableID:
			d.string(&m.SSTableID)
		case manifestVersion:
			d.string(&m.Version)
		case manifestFormat:
			d.string(&m.Format)
		case manifestKind:
			m.Kind = Kind(d.u8())
		case manifestDataLength:
			m.DataLength = d.u64()
		case manifestDataFileLength:
			m.DataFileLength = d.u64()
		case manifestChunkLength:
			m.ChunkLength = d.u32()
		case manifestCompression:
			m.Compression = d.bytes(blob)
		case manifestRuns:
			var r Run
			e := d.element(&runSchema, len(m.Runs))
			r.decode(&e)
			if d.join(&e) {
				m.Runs = append(m.Runs, r)
			}
		case manifestComponents:
			var c ComponentSpec
			e := d.element(&componentSchema, len(m.Components))
			c.decode(&e)
			if d.join(&e) {
				m.Components = append(m.Components, c)
			}
		case manifestIndexSliceLength:
			m.IndexSliceLength = d.u64()
		case manifestPartitions:
			m.Partitions = d.u64()
		case manifestStatistics:
			m.Statistics = d.bytes(blob)
		case manifestDigest:
			m.Digest = d.u32()
		case manifestDeadBytes:
			m.DeadBytes = d.u64()
		case manifestIndexFormat:
			m.IndexFormat = IndexFormat(d.u8())
		case manifestSpans:
			var sp Span
			e := d.element(&spanSchema, len(m.Spans))
			sp.decode(&e)
			if d.join(&e) {
				m.Spans = append(m.Spans, sp)
			}
		}
	}
}

func (r *Run) encode(w *writer) {
	w.uint(runFirstChunk, r.FirstChunk)
	w.uint(runChunkCount, r.ChunkCount)
	w.uint(runFileOffset, r.FileOffset)
	w.uint(runLength, r.Length)
	w.uint(runParent, r.ParentOffset)
}

func (r *Run) decode(d *decoder) {
	for d.next() {
		switch d.tag {
		case runFirstChunk:
			r.FirstChunk = d.u64()
		case runChunkCount:
			r.ChunkCount = d.u64()
		case runFileOffset:
			r.FileOffset = d.u64()
		case runLength:
			r.Length = d.u64()
		case runParent:
			r.ParentOffset = d.u64()
		}
	}
}

func (c *ComponentSpec) encode(w *writer) {
	w.string(componentName, c.Name)
	w.uint(componentLength, c.Length)
}

func (c *ComponentSpec) decode(d *decoder) {
	for d.next() {
		switch d.tag {
		case componentName:
			d.string(&c.Name)
		case componentLength:
			c.Length = d.u64()
		}
	}
}

func (s *Span) encode(w *writer) {
	w.uint(spanLo, s.Lo)
	w.uint(spanHi, s.Hi)
}

func (s *Span) decode(d *decoder) {
	for d.next() {
		switch d.tag {
		case spanLo:
			s.Lo = d.u64()
		case spanHi:
			s.Hi = d.u64()
		}
	}
}
