package stream

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/sluicedb/sluice/internal/lib/fsx"
	"github.com/sluicedb/sluice/sstable/token"
	"github.com/sluicedb/sluice/wire"
)

// FetchRequest asks Peer for the parts of Keyspace.Table in Ranges, to be installed in Dir
// (a Cassandra-layout table directory). With Resume, sstables a previous Fetch of the same
// request into Dir installed are not fetched again, and the sstable it was receiving when it
// stopped restarts after its last verified chunk. Several Fetches may run into one Dir at
// once (they allocate generations under a per-directory lock), but not two of the same
// request (Peer, table and Ranges), which share one resume record.
type FetchRequest struct {
	Peer            string
	Keyspace, Table string
	Ranges          token.RangeSet
	Dir             string
	Resume          bool
	// Source names sstables the sender registered under that id (wire.StreamRequest.Source)
	// instead of the table's live ones; "" for the live table.
	Source string
}

// Fetched is one installed sstable.
type Fetched struct {
	Path       string // the installed sstable's path prefix, e.g. dir/nb-7-big
	Kind       string // entire, partial or rows
	SSTable    string // the sender's ID
	Partitions int64
	Bytes      int64 // bytes received for it, all streams
	// Runs is the number of runs of the parent its Data.db holds (1 for entire and rows
	// sstables); FillerPartitions the filler partitions (empty, in the gaps the runs leave)
	// its index addresses besides its Partitions.
	Runs             int
	FillerPartitions int64
	// FillerBytes and ReencodedBytes (a filled partial): the uncompressed bytes of its filler
	// partitions, and the Data.db bytes of the chunks re-encoded at its runs' edges.
	FillerBytes    int64
	ReencodedBytes int64
	// StrictVerified: sstable.Verify with Strict ran on exactly these files before they were
	// published (Config.VerifyStrict: an entire sstable, or a partial published as filled;
	// not a rows sstable, nor a partial refilled into a copy, which the importer verifies).
	StrictVerified bool
}

// FetchResult is what a Fetch installed.
type FetchResult struct {
	SSTables      []Fetched
	Skipped       []string // sender IDs already installed by an earlier Fetch (Resume)
	Failed        []error  // one *SSTableError per failed sstable
	BytesReceived int64
	Wall          time.Duration
	// Warnings say what the fetch ignored: resume record entries that name no file of the
	// target directory.
	Warnings []string
}

// Fetch runs one receiving session against req.Peer and installs what it receives. It
// returns an error when the session failed (a *SessionError, with the result so far) or
// when some sstables failed (their errors joined, with the result listing what did
// install). Every failed sstable leaves nothing visible in req.Dir. onProgress, if not nil,
// is called from Fetch's goroutine after each sstable and data frame batch.
func Fetch(ctx context.Context, cfg Config, tlsConf *tls.Config, req FetchRequest, onProgress func(SessionStatus)) (*FetchResult, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if req.Peer == "" || req.Keyspace == "" || req.Table == "" || req.Dir == "" || len(req.Ranges) == 0 {
		return nil, fmt.Errorf("stream: FetchRequest needs Peer, Keyspace, Table, Dir and Ranges")
	}
	start := time.Now()
	if err := os.MkdirAll(req.Dir, 0o755); err != nil {
		return nil, err
	}
	state := loadState(req.Dir, req.Peer, req.Keyspace, req.Table, req.Ranges.String(), req.Resume)
	// What installs left in the directory when their process died (a receiver killed
	// mid-fetch): their owner locks say they are gone, whoever ran them. Installs in flight
	// stay.
	removed, err := fsx.CleanLeftovers(req.Dir)
	if err != nil {
		return nil, fmt.Errorf("stream: removing leftovers of dead installs in %s: %w", req.Dir, err)
	}
	if len(removed) > 0 {
		state.warnings = append(state.warnings, fmt.Sprintf("removed %d files that installs left in %s when their process died: %s",
			len(removed), req.Dir, strings.Join(removed[:min(len(removed), 8)], " ")))
	}
	if err := state.sweep(); err != nil {
		return nil, fmt.Errorf("stream: removing leftovers of an earlier fetch in %s: %w", req.Dir, err)
	}
	sr := wire.StreamRequest{Operation: wire.OpFetch, Keyspace: req.Keyspace, Table: req.Table, Ranges: EncodeRanges(req.Ranges),
		Source: req.Source}
	if _, err := rand.Read(sr.SessionID[:]); err != nil {
		return nil, err
	}
	res := &FetchResult{Warnings: state.warnings}
	sr.Resume, res.Skipped = state.points()

	conn, err := dialQUIC(ctx, req.Peer, withALPN(tlsConf), quicConfig(cfg))
	if err != nil {
		return nil, &SessionError{Peer: req.Peer, Code: wire.CodeUnauthorized, Err: err}
	}
	stop := context.AfterFunc(ctx, func() {
		conn.CloseWithError(quic.ApplicationErrorCode(wire.CodeShuttingDown), "fetch cancelled")
	})
	defer stop()
	rs := &recvSession{closeData: func() {}, releaseSpace: func() {}, cfg: cfg, tls: tlsConf, conn: conn, peer: req.Peer, dir: req.Dir, state: state, res: res, onProgress: onProgress,
		tr: newTracker(sr.SessionID.String(), req.Peer, Receiving, req.Keyspace, req.Table)}
	err = rs.run(ctx, sr)
	rs.releaseSpace()
	res.Wall = time.Since(start)
	if err == nil && len(res.Failed) > 0 {
		cfg.observeSession(Receiving, errors.Join(res.Failed...))
	} else {
		cfg.observeSession(Receiving, err)
	}
	if err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (%w)", err, ctx.Err())
		} else if cause := rs.peerClose(err); cause != nil {
			err = fmt.Errorf("%w (%w)", err, cause)
		}
		conn.CloseWithError(quic.ApplicationErrorCode(codeOf(err)), truncate(err.Error(), 512))
		var se *SessionError
		if !errors.As(err, &se) {
			err = &SessionError{Peer: req.Peer, Code: codeOf(err), Err: err}
		}
		return res, err
	}
	conn.CloseWithError(0, "")
	if len(res.Failed) > 0 {
		return res, errors.Join(res.Failed...)
	}
	// The record stays, naming what is installed, so that repeating this request with
	// Resume installs nothing twice.
	if err := state.complete(); err != nil {
		return res, err
	}
	return res, nil
}
