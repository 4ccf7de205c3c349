// Package wire is the versioned message set sluice nodes exchange when they stream
// sstables to one another, with its codecs: pure code over byte slices, with no I/O and no
// goroutines. It imports only the Go standard library.
//
// A session runs over QUIC (mutual TLS, ALPN "sluice/1") on one bidirectional control
// stream plus data streams; every stream carries a sequence of frames. Each side first
// sends a Hello; the responder answers with the HelloAck carrying the version Negotiate
// chose.
//
// # Frames
//
// All integers are unsigned LEB128 varints (encoding/binary's Uvarint, at most 10 bytes):
//
//	frame = uvarint type | uvarint bodyLength | body (bodyLength bytes)
//	body  = field*
//	field = uvarint tag | uvarint length | value (length bytes)
//
// ReadFrameHeader rejects a frame longer than Limits.MaxFrame from its header alone, so no
// memory is ever sized by an unchecked length. A strict prefix of a frame parses as
// io.EOF; once the frame is complete, a field overrunning the body is ErrMalformed.
//
// Field values are one of:
//
//	uint    one uvarint filling the value exactly; a value too large for the Go field
//	        (uint32, uint8) is ErrMalformed
//	string  raw bytes (no terminator, no UTF-8 check), at most Limits.MaxStringLen
//	bytes   raw bytes; tokens are bounded by MaxStringLen, opaque blobs by the frame
//	fixed   exactly the array's size (SessionID 16, Token 32), else ErrMalformed
//	list    the field repeats once per element, in order; an element's value is itself a
//	        field sequence. The count is checked against Limits before the list is
//	        allocated.
//
// Every field listed below is required and occurs exactly once, except lists, which occur
// zero or more times. A missing field is a *FieldError wrapping ErrMissingField; a
// repeated one wraps ErrMalformed (rejecting, rather than "last wins", keeps two decoders
// from disagreeing about one message). Fields with tags the decoder does not know are
// skipped, so a later version adds optional fields with new tags; encoders write fields in
// tag order but decoders accept any order. Message types are append-only; a complete frame
// of an unknown type is an *UnknownMessageError carrying the frame length, so the caller
// may skip it.
//
// Parsed messages share no memory with the input, except Data.Payload, which aliases it.
//
// # Messages
//
//	type  message        tag field             value
//	1     Hello          1   MinVersion        uint (uint32)
//	                     2   MaxVersion        uint (uint32)
//	                     3   Node              string
//	                     4   Features          list of string (MaxFeatures)
//	2     HelloAck       1   Version           uint (uint32)
//	                     2   Node              string
//	3     StreamRequest  1   SessionID         fixed 16
//	                     2   Operation         uint (Op, uint8)
//	                     3   Keyspace          string
//	                     4   Table             string
//	                     5   Ranges            list of TokenRange (MaxRanges)
//	                     6   Resume            list of ResumePoint (MaxSSTables)
//	      TokenRange     1   Left              bytes (token)
//	                     2   Right             bytes (token)
//	      ResumePoint    1   SSTableID         string
//	                     2   VerifiedChunks    uint
//	4     Prepare        1   SessionID         fixed 16
//	                     2   SSTables          list of PlannedSSTable (MaxSSTables)
//	      PlannedSSTable 1   ID                string
//	                     2   Kind              uint (Kind, uint8)
//	                     3   Reason            string
//	                     4   Bytes             uint
//	                     5   Partitions        uint
//	5     Manifest       1   SSTableID         string
//	                     2   Version           string
//	                     3   Format            string
//	                     4   Kind              uint (Kind, uint8)
//	                     5   DataLength        uint
//	                     6   DataFileLength    uint
//	                     7   ChunkLength       uint (uint32)
//	                     8   Compression       bytes (opaque)
//	                     9   Runs              list of Run (MaxRuns)
//	                     10  Components        list of ComponentSpec (MaxComponents)
//	                     11  IndexSliceLength  uint
//	                     12  Partitions        uint
//	                     13  Statistics        bytes (opaque)
//	                     14  Digest            uint (uint32)
//	                     15  DeadBytes         uint
//	                     16  IndexFormat       uint (IndexFormat, uint8)
//	                     17  Spans             list of Span (MaxRuns; FeatureFillInPlace)
//	      Run            1   FirstChunk        uint
//	                     2   ChunkCount        uint
//	                     3   FileOffset        uint
//	                     4   Length            uint
//	                     5   ParentOffset      uint
//	      Span           1   Lo                uint
//	                     2   Hi                uint
//	      ComponentSpec  1   Name              string
//	                     2   Length            uint
//	6     Data           1   SSTableID         string
//	                     2   Stream            uint (DataStream, uint8)
//	                     3   Component         uint (uint32)
//	                     4   Offset            uint
//	                     5   Payload           bytes (aliases the input; always last)
//	7     Received       1   SSTableID         string
//	                     2   VerifiedChunks    uint
//	                     3   Bytes             uint
//	8     Installed      1   SSTableID         string
//	                     2   Partitions        uint
//	9     Complete       1   SessionID         fixed 16
//	                     2   SSTables          uint
//	                     3   Bytes             uint
//	                     4   Partitions        uint
//	10    Failure        1   Code              uint (Code, uint32)
//	                     2   SSTableID         string (empty: the whole session)
//	                     3   Reason            string
//	11    Keepalive      1   Nanos             uint
//	12    TCPDataPlane   1   Token             fixed 32
//	                     2   Addr              string
//
// For example Keepalive{Nanos: 300} is the six bytes 0b 04 01 02 ac 02: type 11, a 4-byte
// body, field 1 of 2 bytes, uvarint 300.
//
// Enumerations (Op, Kind, DataStream, Code) decode any value that fits their Go type, so
// a newer peer's value reaches the session layer, which answers it with a Failure. The
// failure codes are:
//
//	1 protocol  2 version  3 unauthorized  4 not_found  5 checksum  6 no_space
//	7 shutting_down  8 timeout  9 refused  10 internal  11 peer_gone
//
// # Data frames
//
// A Data frame's payload is its last field, so AppendDataHeader writes everything before
// the payload bytes and a sender can follow it with sendfile or splice. ParseData decodes
// a Data frame into a caller's struct without allocating.
//
// # Versions
//
// The message set is version 1 (MinVersion..MaxVersion). The negotiated version governs
// what a sender may emit; decoding needs no version, because fields are tagged and
// unknown ones skipped. A version that changes the meaning of an existing field or message
// must use a new tag or type instead.
package wire
