package stream

import (
	"errors"
	"fmt"
	"hash/crc32"
	"math/bits"
	"strings"

	"github.com/sluicedb/sluice/sstable/compress"
	"github.com/sluicedb/sluice/sstable/descriptor"
	"github.com/sluicedb/sluice/sstable/slice"
	"github.com/sluicedb/sluice/sstable/stats"
	"github.com/sluicedb/sluice/sstable/token"
	"github.com/sluicedb/sluice/sstable/version"
	"github.com/sluicedb/sluice/wire"
)

type receiverState uint8

const (
	recvAwaitAck receiverState = iota
	recvAwaitPrepare
	recvStreaming
	recvDone
	recvFailed
)

var receiverStateNames = [...]string{"await-ack", "await-prepare", "streaming", "done", "failed"}

func (s receiverState) String() string { return receiverStateNames[s] }

// Step is what the driver must do after Receiver.Step: send Send on the control stream,
// then, when Receive is set, read that sstable's data stream into an install; when Discard
// is set, drop (cancel) that sstable's data stream. Done means the session is complete.
type Step struct {
	Send    []wire.Message
	Receive *Incoming
	Discard string
	// Err says why a Manifest was refused (with Discard): the error behind the Failure sent.
	Err  error
	Done bool
	// DataPlane, when set, is the sender's offer of a TCP data connection: the driver dials
	// it and presents its token, and every sstable's data then arrives on that connection.
	DataPlane *wire.TCPDataPlane
}

// Receiver is the receiving side of one session as a pure state machine: no I/O, no
// goroutines, no clock. It validates every message, above all every Manifest, and tracks
// per-sstable progress. The driver owns files; the Receiver tells it where each Data
// frame's bytes go and which chunks are verified. It is not safe for concurrent use.
type Receiver struct {
	cfg      Config
	local    wire.Hello
	req      wire.StreamRequest
	state    receiverState
	version  uint32
	planned  map[string]wire.PlannedSSTable
	order    []string
	outcomes map[string]bool
	cur      *Incoming
	// pending holds the sstables whose bytes all arrived and which wait for the driver's
	// shared commit (Received); Installed or Failed settles them.
	pending map[string]*Incoming
	plane   *wire.TCPDataPlane

	installed  uint64
	bytes      uint64
	partitions uint64
}

// NewReceiver prepares a session that will send req once the Hello exchange is done.
func NewReceiver(cfg Config, req wire.StreamRequest) *Receiver {
	cfg = cfg.withDefaults()
	return &Receiver{cfg: cfg, local: cfg.hello(), req: req}
}

// Start returns the first message: Hello.
func (r *Receiver) Start() []wire.Message {
	h := r.local
	return []wire.Message{&h}
}

// Planned returns the Prepare list once received, in order.
func (r *Receiver) Planned() []wire.PlannedSSTable {
	out := make([]wire.PlannedSSTable, len(r.order))
	for i, id := range r.order {
		out[i] = r.planned[id]
	}
	return out
}

// Current is the sstable whose data is being received, or nil.
func (r *Receiver) Current() *Incoming { return r.cur }

// Done says whether the session completed.
func (r *Receiver) Done() bool { return r.state == recvDone }

func (r *Receiver) fail(code wire.Code, err error) (Step, error) {
	r.state = recvFailed
	return Step{Send: []wire.Message{&wire.Failure{Code: code, Reason: err.Error()}}}, err
}

// Step consumes one control message from the sender. An error ends the session; the Step
// returned with it holds the Failure to send.
func (r *Receiver) Step(m wire.Message) (Step, error) {
	if r.state == recvFailed || r.state == recvDone {
		return Step{}, fmt.Errorf("%w: %v after the session ended", ErrProtocol, m.Type())
	}
	if _, ok := m.(*wire.Keepalive); ok {
		return Step{}, nil
	}
	if f, ok := m.(*wire.Failure); ok && f.SSTableID == "" {
		r.state = recvFailed
		return Step{}, &SessionError{Code: f.Code, Err: f}
	}
	switch r.state {
	case recvAwaitAck:
		a, ok := m.(*wire.HelloAck)
		if !ok {
			return r.fail(wire.CodeProtocol, fmt.Errorf("%w: %v before HelloAck", ErrProtocol, m.Type()))
		}
		if a.Version < r.local.MinVersion || a.Version > r.local.MaxVersion {
			return r.fail(wire.CodeVersion, fmt.Errorf("%w: peer chose version %d outside %d..%d", ErrProtocol, a.Version, r.local.MinVersion, r.local.MaxVersion))
		}
		r.version, r.state = a.Version, recvAwaitPrepare
		req := r.req
		return Step{Send: []wire.Message{&req}}, nil
	case recvAwaitPrepare:
		if dp, ok := m.(*wire.TCPDataPlane); ok {
			// Offered only to a receiver that asked for it (Hello.Features), once, before Prepare.
			switch {
			case !r.cfg.tcpData():
				return r.fail(wire.CodeProtocol, fmt.Errorf("%w: TCPDataPlane offered to a receiver that did not ask for it", ErrProtocol))
			case r.plane != nil:
				return r.fail(wire.CodeProtocol, fmt.Errorf("%w: a second TCPDataPlane", ErrProtocol))
			case dp.Addr == "":
				return r.fail(wire.CodeProtocol, fmt.Errorf("%w: TCPDataPlane without an address", ErrProtocol))
			}
			r.plane = dp
			return Step{DataPlane: dp}, nil
		}
		p, ok := m.(*wire.Prepare)
		if !ok {
			return r.fail(wire.CodeProtocol, fmt.Errorf("%w: %v where Prepare was expected", ErrProtocol, m.Type()))
		}
		if p.SessionID != r.req.SessionID {
			return r.fail(wire.CodeProtocol, fmt.Errorf("%w: Prepare for session %v, not %v", ErrProtocol, p.SessionID, r.req.SessionID))
		}
		r.planned, r.outcomes = map[string]wire.PlannedSSTable{}, map[string]bool{}
		for _, ps := range p.SSTables {
			if ps.ID == "" {
				return r.fail(wire.CodeProtocol, fmt.Errorf("%w: Prepare lists an sstable without ID", ErrProtocol))
			}
			if _, dup := r.planned[ps.ID]; dup {
				return r.fail(wire.CodeProtocol, fmt.Errorf("%w: Prepare lists sstable %q twice", ErrProtocol, ps.ID))
			}
			if ps.Kind < wire.KindEntire || ps.Kind > wire.KindRows {
				return r.fail(wire.CodeProtocol, fmt.Errorf("%w: sstable %q of unknown kind %v", ErrProtocol, ps.ID, ps.Kind))
			}
			r.planned[ps.ID] = ps
			r.order = append(r.order, ps.ID)
		}
		r.state = recvStreaming
		var st Step
		r.maybeComplete(&st)
		return st, nil
	case recvStreaming:
		switch m := m.(type) {
		case *wire.Manifest:
			if r.cur != nil {
				return r.fail(wire.CodeProtocol, fmt.Errorf("%w: Manifest %q while sstable %q is still streaming", ErrProtocol, m.SSTableID, r.cur.ID))
			}
			ps, ok := r.planned[m.SSTableID]
			if !ok {
				return r.fail(wire.CodeProtocol, fmt.Errorf("%w: Manifest for unplanned sstable %q", ErrProtocol, m.SSTableID))
			}
			if _, seen := r.outcomes[m.SSTableID]; seen || r.pending[m.SSTableID] != nil {
				return r.fail(wire.CodeProtocol, fmt.Errorf("%w: second Manifest for sstable %q", ErrProtocol, m.SSTableID))
			}
			in, err := r.validate(ps, m)
			if err != nil {
				st := r.Failed(m.SSTableID, codeOf(err), err.Error())
				st.Discard, st.Err = m.SSTableID, err
				return st, nil
			}
			r.cur = in
			return Step{Receive: in}, nil
		case *wire.Failure:
			if _, ok := r.planned[m.SSTableID]; !ok {
				return r.fail(wire.CodeProtocol, fmt.Errorf("%w: Failure for unplanned sstable %q", ErrProtocol, m.SSTableID))
			}
			if _, seen := r.outcomes[m.SSTableID]; seen {
				// The sender noticed our own Failure (a cancelled stream) and echoes it.
				return Step{}, nil
			}
			if r.pending[m.SSTableID] != nil {
				// Every byte of it is here and its install is the receiver's to decide.
				return Step{}, nil
			}
			var st Step
			if r.cur != nil && r.cur.ID == m.SSTableID {
				r.cur = nil
				st.Discard = m.SSTableID
			}
			r.outcomes[m.SSTableID] = false
			r.maybeComplete(&st)
			return st, nil
		}
	}
	return r.fail(wire.CodeProtocol, fmt.Errorf("%w: %v in state %v", ErrProtocol, m.Type(), r.state))
}

// Received records that every byte of the current sstable id arrived and that the driver
// will commit it later, together with others (one shared sync): the next Manifest may come
// meanwhile. Installed or Failed settles it.
func (r *Receiver) Received(id string) {
	if r.cur == nil || r.cur.ID != id {
		return
	}
	if r.pending == nil {
		r.pending = map[string]*Incoming{}
	}
	r.pending[id], r.cur = r.cur, nil
}

// AllReceived reports whether every planned sstable has arrived whole or has an outcome:
// nothing more will come on the data plane, and the sender waits for the outcomes of what
// is still pending.
func (r *Receiver) AllReceived() bool {
	return r.state == recvStreaming && r.cur == nil && len(r.outcomes)+len(r.pending) >= len(r.planned)
}

// Installed records that the driver committed sstable id (the current one, or one that
// Received made pending) with partitions partitions, and returns the acknowledgements
// (Received, Installed, and Complete when it was the last).
func (r *Receiver) Installed(id string, partitions uint64) Step {
	var st Step
	in := r.cur
	switch {
	case in != nil && in.ID == id:
		r.cur = nil
	case r.pending[id] != nil:
		in = r.pending[id]
		delete(r.pending, id)
	default:
		return st
	}
	r.outcomes[id] = true
	r.installed++
	r.bytes += in.Received()
	r.partitions += partitions
	st.Send = append(st.Send,
		&wire.Received{SSTableID: id, VerifiedChunks: in.VerifiedChunks(), Bytes: in.Received()},
		&wire.Installed{SSTableID: id, Partitions: partitions})
	r.maybeComplete(&st)
	return st
}

// Failed records that sstable id failed locally (bad checksum, no space, a refused
// manifest) and returns the Failure to send, and Complete when it was the last.
func (r *Receiver) Failed(id string, code wire.Code, reason string) Step {
	var st Step
	if r.cur != nil && r.cur.ID == id {
		r.cur = nil
	}
	delete(r.pending, id)
	if _, seen := r.outcomes[id]; seen || r.planned == nil {
		return st
	}
	if _, ok := r.planned[id]; !ok {
		return st
	}
	r.outcomes[id] = false
	st.Send = append(st.Send, &wire.Failure{Code: code, SSTableID: id, Reason: reason})
	r.maybeComplete(&st)
	return st
}

func (r *Receiver) maybeComplete(st *Step) {
	if len(r.outcomes) < len(r.planned) {
		return
	}
	r.state = recvDone
	st.Done = true
	st.Send = append(st.Send, &wire.Complete{SessionID: r.req.SessionID, SSTables: r.installed, Bytes: r.bytes, Partitions: r.partitions})
}

// Incoming is one sstable being received: the validated manifest and what the driver needs
// to place, check and rebuild it, plus its progress.
type Incoming struct {
	ID       string
	Manifest *wire.Manifest
	Kind     wire.Kind
	Version  version.Version
	// Info is the CompressionInfo of the received Data.db (nil: uncompressed).
	Info *compress.Info
	// Layout maps the child's segments onto the parent (partial, rows): where each run of
	// parent chunks lands and how parent positions in the index slice become child ones.
	Layout *slice.Layout
	// CRCChunkLength is the CRC.db chunk length of an uncompressed partial child.
	CRCChunkLength int
	// Spans, for a compressed partial filled as it arrives (not Config.FillAfterReceive), are its
	// runs in parent positions, from the Manifest; nil otherwise.
	Spans []slice.RunPlan
	// fillClean, filling in place, is the fill's last clean point: a checkpoint records it
	// instead of the verified chunks (slice.InPlaceFill.Clean).
	fillClean func() (slice.FillState, bool)
	// DataComponent is the index of Data.db in Manifest.Components (entire), else -1.
	DataComponent int
	// Ranges are the ranges the session asked for, in the sstable's partitioner: a partial's or
	// rows sstable's rebuild, or an entire sstable's verification, fails a partition outside
	// them.
	Ranges token.RangeSet

	sinceCheckpoint int64 // bytes accepted since the verified prefix was last recorded

	// hash is manifestHash(Manifest), kept from before a partial's CompressionInfo bytes were
	// dropped (validate); "" until needed otherwise.
	hash string

	want    []uint64 // expected lengths: [runs, index, components...]
	got     []uint64
	checker *compress.ChunkChecker
	digest  uint32
}

// streamIndex maps a Data frame to its slot in want/got.
func (in *Incoming) slot(d *wire.Data) (int, error) {
	switch d.Stream {
	case wire.StreamRuns:
		return 0, nil
	case wire.StreamIndex:
		return 1, nil
	case wire.StreamComponent:
		if uint64(d.Component) >= uint64(len(in.want)-2) {
			return 0, fmt.Errorf("%w: Data for component %d of %d", ErrProtocol, d.Component, len(in.want)-2)
		}
		return 2 + int(d.Component), nil
	}
	return 0, fmt.Errorf("%w: Data on unknown stream %v", ErrProtocol, d.Stream)
}

// Accept validates one Data frame of this sstable: the right sstable, a known stream, the
// next offset of that stream (frames arrive in order on one QUIC stream) and within the
// announced length. Data.db bytes are CRC-checked chunk by chunk and digested as they pass.
// The caller then writes d.Payload at d.Offset of the stream's target.
func (in *Incoming) Accept(d *wire.Data) error {
	s, err := in.admit(d, uint64(len(d.Payload)))
	if err != nil {
		return err
	}
	in.got[s] += uint64(len(d.Payload))
	if in.isData(d) {
		return in.check(d.Payload)
	}
	return nil
}

// admit validates the header of a Data frame of n payload bytes, as Accept does, and
// returns its slot, without taking its bytes: the TCP data plane places a payload in its
// file before it reads it back for check.
func (in *Incoming) admit(d *wire.Data, n uint64) (int, error) {
	if d.SSTableID != in.ID {
		return 0, fmt.Errorf("%w: Data for sstable %q on the stream of %q", ErrProtocol, d.SSTableID, in.ID)
	}
	s, err := in.slot(d)
	if err != nil {
		return 0, err
	}
	if d.Offset != in.got[s] {
		return 0, fmt.Errorf("%w: %v Data at offset %d, expected %d", ErrProtocol, d.Stream, d.Offset, in.got[s])
	}
	if n > in.want[s]-in.got[s] {
		return 0, fmt.Errorf("%w: %v Data of %d bytes at %d overruns its %d-byte length", ErrProtocol, d.Stream, n, d.Offset, in.want[s])
	}
	return s, nil
}

// check digests the next Data.db bytes and CRC-checks the chunks they complete.
func (in *Incoming) check(p []byte) error {
	in.digest = crc32.Update(in.digest, crc32.IEEETable, p)
	if in.checker != nil {
		if _, err := in.checker.Write(p); err != nil {
			if errors.Is(err, compress.ErrChecksum) {
				return fmt.Errorf("%w: Data.db %w", ErrChecksum, err)
			}
			return fmt.Errorf("%w: Data.db %w", ErrManifest, err)
		}
	}
	return nil
}

// isData says whether d carries Data.db bytes.
func (in *Incoming) isData(d *wire.Data) bool {
	if in.Kind == wire.KindEntire {
		return d.Stream == wire.StreamComponent && int(d.Component) == in.DataComponent
	}
	return d.Stream == wire.StreamRuns
}

// Complete reports whether every announced byte arrived (and every chunk was verified); the
// error says what is missing.
func (in *Incoming) Complete() error {
	for s := range in.want {
		if in.got[s] != in.want[s] {
			return fmt.Errorf("%w: stream slot %d ended at %d of %d bytes", ErrProtocol, s, in.got[s], in.want[s])
		}
	}
	if in.checker != nil && !in.checker.Done() {
		return fmt.Errorf("%w: %d of %d chunks verified", ErrProtocol, in.checker.Verified(), len(in.Info.Offsets))
	}
	return nil
}

// keepCompressionBytes is the largest CompressionInfo a partial's Manifest keeps once it is
// parsed: beyond it (~8,000 chunks, 128 MiB of data) the bytes are dropped, and the hash that
// identifies the Manifest for resume is taken before. Below it the hash is left until needed.
const keepCompressionBytes = 64 << 10

// manifestHash is manifestHash(in.Manifest) as the Manifest arrived.
func (in *Incoming) manifestHash() string {
	if in.hash == "" {
		in.hash = manifestHash(in.Manifest)
	}
	return in.hash
}

// Digest is the CRC32 of the Data.db bytes accepted so far.
func (in *Incoming) Digest() uint32 { return in.digest }

// VerifiedChunks counts the chunks whose CRC matched so far.
func (in *Incoming) VerifiedChunks() uint64 {
	if in.checker == nil {
		return 0
	}
	return in.checker.Verified()
}

// Received counts the bytes accepted so far, all streams together.
func (in *Incoming) Received() uint64 {
	var n uint64
	for _, g := range in.got {
		n += g
	}
	return n
}

// Total counts the bytes announced, all streams together.
func (in *Incoming) Total() uint64 {
	var n uint64
	for _, w := range in.want {
		n += w
	}
	return n
}

// entireComponents are the component names an entire transfer may carry as files, per
// format: the peer never names a file, it picks one of these. Statistics.db and
// CompressionInfo.db travel in the Manifest; TOC.txt is written by the receiver.
var entireComponents = map[version.Format]map[string]bool{
	version.Big: {string(descriptor.Data): true, string(descriptor.Index): true, string(descriptor.Summary): true,
		string(descriptor.Filter): true, string(descriptor.Digest): true, string(descriptor.CRC): true},
	version.BTI: {string(descriptor.Data): true, string(descriptor.Partitions): true, string(descriptor.Rows): true,
		string(descriptor.Filter): true, string(descriptor.Digest): true, string(descriptor.CRC): true},
}

func bad(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrManifest}, args...)...)
}

// validate checks a Manifest against the plan, the limits and itself. Every length that
// will size a buffer or a file is bounded here.
func (r *Receiver) validate(ps wire.PlannedSSTable, m *wire.Manifest) (*Incoming, error) {
	if m.Kind != ps.Kind {
		return nil, bad("kind %v, but Prepare said %v", m.Kind, ps.Kind)
	}
	f, err := version.ParseFormat(m.Format)
	if err != nil {
		return nil, bad("format %q: %v", m.Format, err)
	}
	v, err := version.Parse(f, m.Version)
	if err != nil {
		return nil, bad("version %q: %v", m.Version, err)
	}
	if m.Kind == wire.KindRows {
		// The rows are re-serialised by the sstable writer in the parent's version; it
		// writes only the current versions, not md or me.
		if w, err := version.ParseWritable(v.Name); err != nil || w.Format != v.Format {
			return nil, fmt.Errorf("%w: sstable %s needs its rows rewritten (%s), but the sstable writer cannot write version %s (it writes %s)",
				ErrUnsupported, m.SSTableID, ps.Reason, v, writableNames())
		}
	}
	if m.DataFileLength > uint64(r.cfg.MaxSSTableBytes) || m.DataLength > 1<<62 {
		return nil, bad("Data.db of %d bytes (%d uncompressed) exceeds the %d-byte limit", m.DataFileLength, m.DataLength, r.cfg.MaxSSTableBytes)
	}
	if len(m.Statistics) == 0 {
		return nil, bad("no Statistics.db")
	}
	st, err := stats.Parse(m.Statistics, v)
	if err != nil {
		return nil, bad("Statistics.db: %v", err)
	}
	if st.Validation == nil {
		return nil, bad("Statistics.db lacks its validation component (the partitioner)")
	}
	part, err := token.ForName(st.Validation.Partitioner)
	if err != nil {
		return nil, bad("Statistics.db: %v", err)
	}
	// The ranges asked for, in the sstable's partitioner: what every partition must lie in.
	ranges, err := DecodeRanges(part, r.req.Ranges)
	if err != nil {
		return nil, bad("the requested ranges in the sstable's partitioner %s: %v", part.Name(), err)
	}
	in := &Incoming{ID: m.SSTableID, Manifest: m, Kind: m.Kind, Version: v, DataComponent: -1, Ranges: ranges}
	if len(m.Compression) > 0 {
		info, err := compress.ParseInfo(m.Compression, v)
		if err != nil {
			return nil, bad("CompressionInfo: %v", err)
		}
		if uint64(info.ChunkLength) != uint64(m.ChunkLength) || uint64(info.DataLength) != m.DataLength {
			return nil, bad("CompressionInfo says chunk length %d and data length %d, the manifest %d and %d",
				info.ChunkLength, info.DataLength, m.ChunkLength, m.DataLength)
		}
		// Only an entire sstable may start with a head pad (a reflinked child sent as it is).
		if len(info.Offsets) == 0 || info.Offsets[0] < 0 || (info.Offsets[0] != 0 && m.Kind != wire.KindEntire) {
			return nil, bad("first chunk not at offset 0")
		}
		for k := 1; k < len(info.Offsets); k++ {
			if info.Offsets[k] <= info.Offsets[k-1] {
				return nil, bad("chunk offsets not increasing at chunk %d", k)
			}
		}
		if last := info.Offsets[len(info.Offsets)-1]; last < 0 || uint64(last)+4 > m.DataFileLength {
			return nil, bad("last chunk at %d does not fit the %d-byte Data.db", last, m.DataFileLength)
		}
		in.Info = info
		in.checker = compress.NewChunkChecker(info.Offsets, int64(m.DataFileLength))
	}
	switch m.Kind {
	case wire.KindPartial, wire.KindRows:
		err = r.validatePartial(in, m)
		if err == nil && len(m.Compression) > keepCompressionBytes {
			// A partial's CompressionInfo.db is rebuilt from Info: the Manifest's copy (8
			// bytes per chunk) need not stay beside it for the whole transfer. The resume
			// record identifies the Manifest by a hash that covers it, taken first.
			in.hash = manifestHash(m)
			m.Compression = nil
		}
	case wire.KindEntire:
		err = r.validateEntire(in, m, f)
	default:
		err = bad("unknown kind %v", m.Kind)
	}
	if err != nil {
		return nil, err
	}
	return in, nil
}

func (r *Receiver) validatePartial(in *Incoming, m *wire.Manifest) error {
	if m.Partitions == 0 {
		return bad("a %v sstable without partitions", m.Kind)
	}
	if m.IndexSliceLength == 0 || m.IndexSliceLength > uint64(r.cfg.MaxIndexSlice) {
		return bad("index slice of %d bytes (limit %d)", m.IndexSliceLength, r.cfg.MaxIndexSlice)
	}
	if m.DataFileLength == 0 {
		return bad("empty Data.db")
	}
	if in.Info == nil {
		if m.DataLength != m.DataFileLength {
			return bad("uncompressed data length %d differs from the file length %d", m.DataLength, m.DataFileLength)
		}
		if m.ChunkLength < 512 || m.ChunkLength > 1<<24 || m.ChunkLength&(m.ChunkLength-1) != 0 {
			return bad("CRC chunk length %d", m.ChunkLength)
		}
		in.CRCChunkLength = int(m.ChunkLength)
	}
	lay, err := partialLayout(in.Info, m)
	if err != nil {
		return err
	}
	in.Layout = lay
	if len(m.Spans) > 0 {
		if in.Info == nil {
			return bad("spans for an uncompressed partial")
		}
		if !r.cfg.FillAfterReceive {
			in.Spans = make([]slice.RunPlan, len(m.Spans))
			for i, sp := range m.Spans {
				if sp.Lo >= sp.Hi || sp.Hi > 1<<62 {
					return bad("span %d [%d, %d)", i, sp.Lo, sp.Hi)
				}
				in.Spans[i] = slice.RunPlan{Lo: int64(sp.Lo), Hi: int64(sp.Hi)}
			}
		}
	}
	in.want = []uint64{m.DataFileLength, m.IndexSliceLength}
	switch {
	case m.IndexFormat == wire.IndexRecords:
	case m.IndexFormat == wire.IndexBig && in.Version.Format == version.Big:
		// Offered in every Hello (Config.hello).
	case m.IndexFormat == wire.IndexPositions && in.Version.Format == version.BTI && in.Info != nil:
		// Offered in every Hello too; the keys are read from the compressed Data.db received.
	default:
		return bad("index slice format %d for a %s sstable", m.IndexFormat, in.Version.Format)
	}
	switch in.Version.Format {
	case version.BTI:
		if len(m.Components) != 1 || m.Components[0].Name != string(descriptor.Rows) {
			return bad("a BTI partial must carry exactly the Rows.db slice as its component")
		}
		if m.Components[0].Length > uint64(r.cfg.MaxIndexSlice) {
			return bad("rows slice of %d bytes (limit %d)", m.Components[0].Length, r.cfg.MaxIndexSlice)
		}
		in.want = append(in.want, m.Components[0].Length)
	default:
		if len(m.Components) != 0 {
			return bad("a BIG partial carries no components, got %d", len(m.Components))
		}
	}
	in.got = make([]uint64, len(in.want))
	return nil
}

// partialLayout checks a partial manifest's runs (one per segment of parent chunks, in order,
// back to back in the child's Data.db) against its CompressionInfo and lengths, and returns
// the child's layout.
func partialLayout(info *compress.Info, m *wire.Manifest) (*slice.Layout, error) {
	if len(m.Runs) == 0 {
		return nil, bad("a partial child without runs")
	}
	segs := make([]slice.Segment, len(m.Runs))
	var chunks uint64
	for i, run := range m.Runs {
		if run.ChunkCount == 0 || run.ChunkCount > 1<<40 || run.FirstChunk > 1<<40 || run.Length == 0 ||
			run.Length > m.DataFileLength || run.FileOffset > m.DataFileLength {
			return nil, bad("run %d: chunks %d+%d, %d bytes at %d", i, run.FirstChunk, run.ChunkCount, run.Length, run.FileOffset)
		}
		if run.ParentOffset > 1<<62 {
			return nil, bad("run %d at parent offset %d", i, run.ParentOffset)
		}
		segs[i] = slice.Segment{FirstChunk: int(run.FirstChunk), LastChunk: int(run.FirstChunk + run.ChunkCount - 1),
			PLo: int64(run.ParentOffset), DstOff: int64(run.FileOffset), SrcEnd: int64(run.Length)}
		if info != nil && (chunks >= uint64(len(info.Offsets)) || info.Offsets[chunks] != int64(run.FileOffset)) {
			return nil, bad("run %d at %d does not start at a chunk of CompressionInfo", i, run.FileOffset)
		}
		chunks += run.ChunkCount
	}
	if info != nil {
		L, c := uint64(m.ChunkLength), uint64(len(info.Offsets))
		if chunks != c {
			return nil, bad("runs of %d chunks, CompressionInfo has %d", chunks, c)
		}
		// FORMAT.md §5 rule 2: (C-1)*L < dataLength <= C*L.
		if hi, _ := bits.Mul64(c, L); hi != 0 || m.DataLength <= (c-1)*L || m.DataLength > c*L {
			return nil, bad("data length %d does not fit %d chunks of %d", m.DataLength, c, L)
		}
	}
	lay, err := slice.ReceivedLayout(info != nil, int64(m.ChunkLength), int64(m.DataLength), segs)
	if err != nil {
		return nil, bad("%v", err)
	}
	if uint64(lay.FileLength) != m.DataFileLength {
		return nil, bad("runs fill %d bytes of the %d-byte Data.db", lay.FileLength, m.DataFileLength)
	}
	return lay, nil
}

func (r *Receiver) validateEntire(in *Incoming, m *wire.Manifest, f version.Format) error {
	if len(m.Runs) != 0 || m.IndexSliceLength != 0 {
		return bad("an entire sstable carries no runs or index slice")
	}
	allowed := entireComponents[f]
	seen := map[string]bool{}
	in.want = []uint64{0, 0}
	var total uint64
	for i, c := range m.Components {
		if !allowed[c.Name] {
			return bad("component %q is not one an entire %v sstable may carry", c.Name, f)
		}
		if seen[c.Name] {
			return bad("component %q twice", c.Name)
		}
		seen[c.Name] = true
		if c.Length > uint64(r.cfg.MaxSSTableBytes)-total {
			return bad("components exceed the %d-byte limit", r.cfg.MaxSSTableBytes)
		}
		total += c.Length
		if c.Name == string(descriptor.Data) {
			in.DataComponent = i
			if c.Length != m.DataFileLength {
				return bad("Data.db component of %d bytes, manifest says %d", c.Length, m.DataFileLength)
			}
		}
		in.want = append(in.want, c.Length)
	}
	if in.DataComponent < 0 {
		return bad("no Data.db component")
	}
	if in.Info == nil && m.DataLength != m.DataFileLength {
		return bad("uncompressed data length %d differs from the file length %d", m.DataLength, m.DataFileLength)
	}
	in.got = make([]uint64, len(in.want))
	return nil
}

func writableNames() string {
	names := make([]string, len(version.Writable))
	for i, w := range version.Writable {
		names[i] = w.Name
	}
	return strings.Join(names, ", ")
}

// dataSlot is the want/got slot that carries Data.db.
func (in *Incoming) dataSlot() int {
	if in.Kind == wire.KindEntire {
		return 2 + in.DataComponent
	}
	return 0
}

// DataFrame returns a Data frame header for Data.db bytes of this sstable at offset, as the
// sender would send them: the driver replays a resumed prefix through Accept with it.
func (in *Incoming) DataFrame(offset int64, payload []byte) wire.Data {
	d := wire.Data{SSTableID: in.ID, Stream: wire.StreamRuns, Offset: uint64(offset), Payload: payload}
	if in.Kind == wire.KindEntire {
		d.Stream, d.Component = wire.StreamComponent, uint32(in.DataComponent)
	}
	return d
}

// ResumeOffset is where this sstable's Data.db bytes restart when the receiver holds its
// first verified chunks; ok is false when there is nothing to skip or the count does not
// fit. Sender and receiver compute it from the same manifest facts (dataResumeOffset).
func (in *Incoming) ResumeOffset(verified uint64) (int64, bool) {
	return dataResumeOffset(in.Info, in.Manifest.ChunkLength, int64(in.Manifest.DataFileLength), verified)
}

// Checkpoint returns how many Data.db chunks arrived whole and (compressed) CRC-verified,
// and the byte length of that prefix: what a later session may resume from.
// Uncompressed Data.db has no inline checksums; its chunks are the CRC grid (the
// manifest's chunk length, DefaultCRCChunkLength when 0), counted as they arrive, and
// the last, short one only at the end of the file.
func (in *Incoming) Checkpoint() (chunks uint64, bytes int64) {
	if in.checker != nil {
		chunks = in.checker.Verified()
	} else {
		got, grid := in.got[in.dataSlot()], uint64(resumeGrid(in.Manifest.ChunkLength))
		chunks = got / grid
		if got == in.Manifest.DataFileLength && got%grid != 0 {
			chunks++
		}
	}
	off, ok := in.ResumeOffset(chunks)
	if !ok {
		return 0, 0
	}
	return chunks, off
}

// checkpointBytes is how often, in received bytes, the verified Data.db prefix of the sstable
// in progress is made durable and recorded, so that even a crash (not only a failed session,
// which records it at once) loses at most this much.
const checkpointBytes = 64 << 20

// Progress counts n more bytes accepted and written, and says whether the verified prefix is
// due to be recorded (every checkpointBytes).
func (in *Incoming) Progress(n int64) (checkpoint bool) {
	if in.sinceCheckpoint += n; in.sinceCheckpoint >= checkpointBytes {
		in.sinceCheckpoint = 0
		return true
	}
	return false
}

// resumedAt takes up a receive filled in place after the first chunks received bytes of
// Data.db, whose CRC32 is digest, proven and kept by an earlier session.
func (in *Incoming) resumedAt(chunks int, bytes int64, digest uint32) error {
	if in.checker == nil || int64(in.got[0]) != 0 || bytes < 0 || uint64(bytes) > in.want[0] {
		return fmt.Errorf("%w: resuming %s at %d bytes", ErrManifest, in.ID, bytes)
	}
	in.got[0], in.digest = uint64(bytes), digest
	in.checker.Skip(chunks)
	return nil
}

// CheckpointAt is Checkpoint when a record of it is worth writing: some chunks verified, and
// no earlier sstable of the request still waiting to resume from the one kept prefix a
// request may have (pendingResumes counts those).
func (in *Incoming) CheckpointAt(pendingResumes int) (chunks uint64, bytes int64, ok bool) {
	chunks, bytes = in.Checkpoint()
	return chunks, bytes, chunks > 0 && pendingResumes == 0
}

// FailureFacts is what a driver knows when an sstable's transfer stops with an error.
type FailureFacts struct {
	// SessionOver: the context ended, the connection is gone or the data plane broke
	// mid-frame — nothing more can arrive in this session.
	SessionOver bool
	// PrefixIntact: every byte accepted so far was also written.
	PrefixIntact bool
	// Kept: the Data.db being received has a second name that outlives the install.
	Kept bool
}

// FailureAction is what the driver does next.
type FailureAction struct {
	// EndSession: return the error, the session is over; otherwise fail this sstable alone
	// (forget its kept prefix, tell the sender) and go on with the next.
	EndSession bool
	// Checkpoint: first record the verified prefix, for a later resume.
	Checkpoint bool
}

// DecideFailure is the keep/fail/checkpoint decision for a failed transfer: a session that is
// over keeps what it verified, when every accepted byte was written and has a name to be
// found under; a session that goes on fails only this sstable, which then restarts whole.
func DecideFailure(f FailureFacts) FailureAction {
	if f.SessionOver {
		return FailureAction{EndSession: true, Checkpoint: f.PrefixIntact && f.Kept}
	}
	return FailureAction{}
}

func resumeGrid(chunkLength uint32) int64 {
	if chunkLength == 0 {
		return compress.DefaultCRCChunkLength
	}
	return int64(chunkLength)
}

// dataResumeOffset is the Data.db offset of the first chunk after verified ones: for a
// compressed file the offset CompressionInfo gives chunk verified (the file length after
// the last), for an uncompressed one verified times the CRC grid, capped at the file
// length. ok is false for 0 chunks and for a count past the end, for which the data
// restarts at 0.
func dataResumeOffset(info *compress.Info, chunkLength uint32, fileLen int64, verified uint64) (int64, bool) {
	if verified == 0 || fileLen <= 0 {
		return 0, false
	}
	if info != nil {
		switch {
		case verified < uint64(len(info.Offsets)):
			return info.Offsets[verified], true
		case verified == uint64(len(info.Offsets)):
			return fileLen, true
		}
		return 0, false
	}
	grid := resumeGrid(chunkLength)
	if verified > uint64((fileLen+grid-1)/grid) {
		return 0, false
	}
	return min(int64(verified)*grid, fileLen), true
}
