package node

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/sluicedb/sluice/internal/adminapi"
	"github.com/sluicedb/sluice/internal/cassandra"
	"github.com/sluicedb/sluice/internal/lib/cqlname"
	"github.com/sluicedb/sluice/membership/gossip"
)

// The Cassandra sidecar (the cassandra: section): the node keeps the ring the local Cassandra
// node describes (read over CQL by internal/cassandra, refreshed every refresh_interval and on
// the driver's topology, status and schema events), serves it on GET /v1/cassandra/ring, and
// imports verified sstables into the live node with nodetool import (POST
// /v1/cassandra/import). Its sstables are served from data_file_directories like any data
// directory's (internal/catalog holds them through hard-link snapshots under each table's
// snapshots/ directory; nothing else is written there).

// ErrNotSidecar reports a Cassandra operation on a node without a cassandra section.
var ErrNotSidecar = errors.New("node: no cassandra section: this node is not the sidecar of a Cassandra node")

// ErrNoRing reports a sidecar that has not read the ring from its Cassandra node yet.
var ErrNoRing = errors.New("node: no ring read from the Cassandra node yet")

// ringReader is what the sidecar needs of internal/cassandra's Reader; tests fake it.
type ringReader interface {
	Read(ctx context.Context) (cassandra.Snapshot, error)
	Changes() <-chan struct{}
	Close()
}

// sidecar is the node's side of a live Cassandra node. Its methods may be called
// concurrently; run owns the reader's life.
type sidecar struct {
	cfg  cassandra.Config
	dirs []string // data_file_directories
	log  zerolog.Logger
	// dial connects to Cassandra (cassandra.Dial in production).
	dial func(ctx context.Context) (ringReader, error)
	// runNodetool runs nodetool (nil: cassandra.ExecRunner).
	runNodetool cassandra.Runner
	// jmx is the persistent JMX client imports go through (cassandra.jmx_address); nil:
	// nodetool import.
	jmx *cassandra.JMX

	// dialled is closed once run's first dial returned, so that a request right after start
	// waits for it rather than finding no reader.
	dialled  chan struct{}
	onceDial sync.Once
	mu       sync.Mutex
	hostID   string       // the local Cassandra node's, once read
	announce func(string) // called with hostID whenever it is first read or changes
	reader   ringReader   // nil until dialled, and after a failed read until run dials again
	snap     cassandra.Snapshot
	have     bool  // snap holds a read
	lastErr  error // of the last dial or read, nil after a good read
}

// changeDebounce gathers a burst of driver events into one read.
const changeDebounce = time.Second

// newSidecar prepares the sidecar of cfg (defaults applied), or returns nil without a
// cassandra section. It touches neither the file system nor the network.
func newSidecar(cfg Config, log zerolog.Logger) *sidecar {
	if cfg.Cassandra == nil {
		return nil
	}
	cc := *cfg.Cassandra
	s := &sidecar{cfg: cc, dirs: cc.DataFileDirectories, log: log.With().Str("component", "cassandra").Logger(),
		dialled: make(chan struct{}), jmx: cassandra.NewJMX(cc)}
	s.dial = func(ctx context.Context) (ringReader, error) {
		r, err := cassandra.Dial(ctx, cc, driverLog{s.log})
		if err != nil {
			return nil, err
		}
		return r, nil
	}
	return s
}

// run checks the staging directory, then reads the ring until ctx ends: at once, every
// refresh_interval, and after a burst of the driver's events. A failed dial or read is logged
// and retried (dial: backing off up to refresh_interval).
func (s *sidecar) run(ctx context.Context) {
	s.checkStaging()
	retry := time.Second
	firstDial := func() { s.onceDial.Do(func() { close(s.dialled) }) }
	defer firstDial()
	if s.jmx != nil {
		defer s.jmx.Close()
		go func() {
			if err := s.jmx.Start(ctx); err != nil && ctx.Err() == nil {
				s.log.Warn().Err(err).Msg("starting the JMX client (imports will try again)")
			}
		}()
	}
	defer func() {
		s.mu.Lock()
		if s.reader != nil {
			s.reader.Close()
			s.reader = nil
		}
		s.mu.Unlock()
	}()
	for {
		s.mu.Lock()
		r := s.reader
		s.mu.Unlock()
		if r == nil {
			var err error
			r, err = s.dial(ctx)
			if err == nil {
				s.mu.Lock()
				s.reader = r
				s.mu.Unlock()
			}
			firstDial()
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				s.setErr(err)
				s.log.Warn().Err(err).Dur("retry_in", retry).Msg("cannot reach the Cassandra node")
				if !wait(ctx, retry) {
					return
				}
				retry = min(2*retry, s.cfg.RefreshInterval)
				continue
			}
			retry = time.Second
			s.log.Info().Str("native_address", s.cfg.NativeAddress).Msg("connected to the Cassandra node")
		}
		if _, err := s.refresh(ctx); err != nil {
			if ctx.Err() != nil {
				return
			}
			s.log.Warn().Err(err).Msg("reading the Cassandra ring")
			s.mu.Lock()
			if s.reader == r {
				s.reader = nil
			}
			s.mu.Unlock()
			r.Close()
			if !wait(ctx, retry) {
				return
			}
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(s.cfg.RefreshInterval):
		case <-r.Changes():
			if !wait(ctx, changeDebounce) {
				return
			}
		}
	}
}

// wait waits d or until ctx ends; it reports whether ctx is still live.
func wait(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

func (s *sidecar) setErr(err error) {
	s.mu.Lock()
	s.lastErr = err
	s.mu.Unlock()
}

// refresh reads the ring now through the current reader and keeps it.
func (s *sidecar) refresh(ctx context.Context) (cassandra.Snapshot, error) {
	s.mu.Lock()
	r := s.reader
	s.mu.Unlock()
	if r == nil {
		return cassandra.Snapshot{}, errors.New("not connected to the Cassandra node")
	}
	snap, err := r.Read(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.lastErr = err
		return cassandra.Snapshot{}, err
	}
	if s.have {
		old, _ := s.snap.LocalNode()
		if cur, _ := snap.LocalNode(); !equalTokens(old.Tokens, cur.Tokens) {
			s.log.Info().Int("was", len(old.Tokens)).Int("tokens", len(cur.Tokens)).Msg("the local Cassandra node's tokens changed")
		}
		if len(snap.Nodes) != len(s.snap.Nodes) {
			s.log.Info().Int("was", len(s.snap.Nodes)).Int("nodes", len(snap.Nodes)).Msg("the Cassandra ring's node count changed")
		}
	} else {
		l, _ := snap.LocalNode()
		s.log.Info().Str("host_id", l.HostID).Int("tokens", len(l.Tokens)).Int("nodes", len(snap.Nodes)).Str("dc", l.DC).Str("rack", l.Rack).
			Msg("read the Cassandra ring")
	}
	s.snap, s.have, s.lastErr = snap, true, nil
	if l, ok := snap.LocalNode(); ok && l.HostID != s.hostID {
		s.hostID = l.HostID
		if s.announce != nil {
			go s.announce(l.HostID) // gossip's SetMeta must not run under s.mu
		}
	}
	return snap, nil
}

// onHostID makes the sidecar call announce with the local Cassandra node's host id now (if it
// has been read) and whenever it changes.
func (s *sidecar) onHostID(announce func(string)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.announce = announce
	if s.hostID != "" {
		go announce(s.hostID)
	}
}

// refuseOwnRing is the error of an operation on sluice's own token ring asked of a sidecar,
// whose ring is its Cassandra node's: those operations would write into Cassandra's live
// table directories.
func (n *Node) refuseOwnRing(op string) error {
	if n.sidecar == nil {
		return nil
	}
	return fmt.Errorf("%w: %s works on sluice's own ring; this node is the sidecar of a Cassandra node (use sluice cassandra ... or nodetool)", ErrBadState, op)
}

func equalTokens(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// snapshot is a fresh read when Cassandra answers, else the last good one with why it is
// stale; an error when there is none.
func (s *sidecar) snapshot(ctx context.Context) (cassandra.Snapshot, string, error) {
	t := time.NewTimer(s.cfg.Timeout)
	select {
	case <-s.dialled:
	case <-ctx.Done():
	case <-t.C:
	}
	t.Stop()
	snap, err := s.refresh(ctx)
	if err == nil {
		return snap, "", nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.have {
		return s.snap, fmt.Sprintf("the Cassandra node does not answer (%v): this is the read of %s", err, s.snap.ReadAt.Format(time.RFC3339)), nil
	}
	if s.lastErr != nil {
		err = s.lastErr
	}
	return cassandra.Snapshot{}, "", fmt.Errorf("%w (at %s): %w", ErrNoRing, s.cfg.NativeAddress, err)
}

// checkStaging creates the staging directories, reports each data directory with no staging
// directory on its file system (imports bound for it will be refused), and sweeps what an
// earlier run left in each: what a rebuild or a load fetched is removed; imports an earlier run
// left are listed (their sstables are the operator's to import or remove: they may be the
// only copy). The load journal and the record of imported loads stay in the first staging
// directory (cassandra.staging_dir), as with a single one.
func (s *sidecar) checkStaging() {
	for _, st := range s.cfg.StagingDirs {
		if err := os.MkdirAll(st, 0o755); err != nil {
			s.log.Error().Err(err).Str("staging_dir", st).Msg("cannot create the staging directory: imports staged there will fail")
		}
	}
	pairs, problems := cassandra.PairStaging(s.dirs, s.cfg.StagingDirs)
	for _, p := range problems {
		s.log.Error().Str("problem", p).Strs("staging_dirs", s.cfg.StagingDirs).Strs("data_file_directories", s.dirs).
			Msg("a data file directory has no staging directory on its file system: imports into it will be refused")
	}
	for i, d := range s.dirs {
		if pairs[i] != "" && len(s.dirs) > 1 {
			s.log.Info().Str("data_file_directory", d).Str("staging_dir", pairs[i]).Msg("staging directory of a data file directory")
		}
	}
	for _, st := range s.cfg.StagingDirs {
		s.sweepStaging(st)
	}
}

// sweepStaging removes what an interrupted rebuild or load left in the staging directory st
// and lists imports an earlier run left there.
func (s *sidecar) sweepStaging(st string) {
	// A rebuild's or a load's directories hold fetched copies or staged links Cassandra never
	// saw (the Importer moves sstables out of them before nodetool runs): the data is still at
	// its source.
	var old []string
	for _, prefix := range []string{RebuildStagingPrefix, LoadStagingPrefix, LoadReceivedPrefix} {
		m, _ := filepath.Glob(filepath.Join(st, prefix+"*"))
		old = append(old, m...)
	}
	for _, p := range old {
		if err := os.RemoveAll(p); err != nil {
			s.log.Warn().Err(err).Str("dir", p).Msg("cannot remove what an interrupted rebuild fetched")
		} else {
			s.log.Info().Str("dir", p).Msg("removed what an interrupted rebuild fetched")
		}
	}
	left, _ := filepath.Glob(filepath.Join(st, cassandra.StagingPrefix+"*"))
	for _, p := range left {
		s.log.Warn().Str("dir", p).Msg("an interrupted import left sstables in the staging directory: import them (sluice cassandra import) or remove them")
	}
}

// CassandraRing is the ring the local Cassandra node describes, each node with its sidecar.
func (n *Node) CassandraRing(ctx context.Context) (adminapi.CassandraRing, error) {
	s := n.sidecar
	if s == nil {
		return adminapi.CassandraRing{}, ErrNotSidecar
	}
	snap, stale, err := s.snapshot(ctx)
	if err != nil {
		return adminapi.CassandraRing{}, err
	}
	v := adminapi.CassandraRing{Cluster: snap.ClusterName, Partitioner: snap.Partitioner, ReadAt: snap.ReadAt, Stale: stale,
		Nodes: []adminapi.CassandraNode{}, Keyspaces: []adminapi.CassandraKeyspace{}, SidecarMatch: sidecarMatchDoc}
	var members []gossip.Member
	c := n.cluster.Load()
	if c != nil {
		members = c.g.Members()
	}
	for _, cn := range snap.Nodes {
		an := adminapi.CassandraNode{HostID: cn.HostID, Address: cn.Address, ListenAddress: cn.ListenAddress,
			NativeAddress: cn.NativeAddress, NativePort: cn.NativePort, DC: cn.DC, Rack: cn.Rack, State: string(cn.State),
			Local: cn.Local, TokenCount: len(cn.Tokens), Tokens: append([]int64{}, cn.Tokens...), ReleaseVersion: cn.ReleaseVersion}
		if cn.Local {
			v.Local = cn.HostID
		}
		an.Sidecar, an.SidecarName = matchSidecar(cn, n.cfg.Name, c != nil, members)
		v.Nodes = append(v.Nodes, an)
	}
	tables := map[string]int{}
	for _, t := range snap.Tables {
		tables[t.Keyspace]++
	}
	for _, k := range snap.Keyspaces {
		ak := adminapi.CassandraKeyspace{Name: k.Name, Replication: k.Replication, Tables: tables[k.Name]}
		if st, err := snap.Strategy(k.Name); err != nil {
			ak.Unsupported = err.Error()
		} else {
			ak.Strategy = fmt.Sprint(st)
		}
		v.Keyspaces = append(v.Keyspaces, ak)
	}
	return v, nil
}

// sidecarMatchDoc says how other sidecars are found; see matchSidecar.
const sidecarMatchDoc = "the gossip member announcing the node's host id (cassandra_host_id); a member announcing none, by the host of its stream or admin address"

// matchSidecar finds the sluice sidecar of Cassandra node cn: this node for the local one;
// else, with membership, the gossip member that announces cn's host id (its signed metadata;
// a member announcing none is matched by the host of its stream or admin address): up when
// it is alive and proven, down otherwise, missing when no member matches; without
// membership, unknown.
func matchSidecar(cn cassandra.Node, self string, membership bool, members []gossip.Member) (state, name string) {
	if cn.Local {
		return adminapi.SidecarUp, self
	}
	if !membership {
		return adminapi.SidecarUnknown, ""
	}
	addrs := map[string]bool{}
	for _, a := range []string{cn.Address, cn.ListenAddress, cn.NativeAddress} {
		if ip := net.ParseIP(a); ip != nil {
			addrs[ip.String()] = true
		} else if a != "" {
			addrs[a] = true
		}
	}
	// A sidecar announces the host id it sits beside; one that announces none (an older
	// sluice, or one whose own node has not answered yet: a replacement's) is matched by the
	// host of its stream or admin address, only when no member announces the host id.
	for _, byID := range []bool{true, false} {
		best := ""
		for _, m := range members {
			match := m.Meta.CassandraHostID != "" && strings.EqualFold(m.Meta.CassandraHostID, cn.HostID)
			if !byID {
				match = m.Meta.CassandraHostID == "" && (hostIn(m.Meta.StreamAddr, addrs) || hostIn(m.Meta.AdminAddr, addrs))
			}
			if m.Name == self || !match {
				continue
			}
			if m.Liveness == gossip.StateAlive && m.Identity == gossip.IdentityProven {
				return adminapi.SidecarUp, m.Name
			}
			best = m.Name
		}
		if best != "" {
			return adminapi.SidecarDown, best
		}
	}
	return adminapi.SidecarMissing, ""
}

func hostIn(hostport string, addrs map[string]bool) bool {
	h, _, err := net.SplitHostPort(hostport)
	if err != nil || h == "" {
		return false
	}
	if ip := net.ParseIP(h); ip != nil {
		h = ip.String()
	}
	return addrs[h]
}

// importTimeout bounds one import (verification, nodetool, confirmation).
const importTimeout = time.Hour

// CassandraImport verifies the sstables of req.Dir and imports them into the live node
// (cassandra.Importer). The import runs on the node's context, not the request's: a client
// that goes away does not leave an import of unknown outcome behind.
func (n *Node) CassandraImport(ctx context.Context, req adminapi.CassandraImportRequest) (adminapi.CassandraImportResult, error) {
	s := n.sidecar
	if s == nil {
		return adminapi.CassandraImportResult{}, ErrNotSidecar
	}
	if err := cqlname.CheckTable(req.Keyspace, req.Table); err != nil {
		return adminapi.CassandraImportResult{}, badRequest{err}
	}
	if !filepath.IsAbs(req.Dir) {
		return adminapi.CassandraImportResult{}, badRequest{fmt.Errorf("dir %q: want an absolute path on the node's host", req.Dir)}
	}
	snap, _, err := s.snapshot(ctx)
	if err != nil {
		return adminapi.CassandraImportResult{}, err
	}
	tb, ok := snap.Table(req.Keyspace, req.Table)
	if !ok {
		return adminapi.CassandraImportResult{}, badRequest{fmt.Errorf("the Cassandra node has no table %s.%s (system_schema.tables)", req.Keyspace, req.Table)}
	}
	im := s.importer(snap, req.Keyspace)
	nodeName := im.Node
	base := n.runCtx
	if base == nil {
		base = ctx
	}
	ictx, cancel := context.WithTimeout(base, importTimeout)
	defer cancel()
	defer n.tracker.Hold()()
	log := s.log.With().Str("keyspace", req.Keyspace).Str("table", req.Table).Str("dir", req.Dir).Logger()
	log.Info().Msg("importing into the live Cassandra node")
	res, err := im.Import(ictx, cassandra.ImportRequest{Keyspace: req.Keyspace, Table: req.Table, TableID: tb.ID, Dir: req.Dir})
	if err != nil {
		log.Error().Err(err).Msg("import failed")
		if errors.Is(err, cassandra.ErrVerify) || errors.Is(err, cassandra.ErrNothingToImport) {
			return adminapi.CassandraImportResult{}, badRequest{err}
		}
		return adminapi.CassandraImportResult{}, err
	}
	out := adminapi.CassandraImportResult{Node: nodeName, Keyspace: req.Keyspace, Table: req.Table, TableID: tb.ID,
		SSTables: []adminapi.CassandraImportedSSTable{}, Nodetool: res.Output, ElapsedSeconds: res.Elapsed.Seconds()}
	for _, t := range res.SSTables {
		out.SSTables = append(out.SSTables, adminapi.CassandraImportedSSTable{Source: t.Source, Live: t.Live, Bytes: t.Bytes, Copied: t.Copied})
	}
	log.Info().Int("sstables", len(out.SSTables)).Float64("seconds", out.ElapsedSeconds).Float64("verify_seconds", res.Verified.Seconds()).
		Float64("cassandra_seconds", res.HandedOver.Seconds()).Msg("imported and confirmed")
	return out, nil
}

// The admin API's view of the sidecar: the node's refusals mapped to statuses.

var _ adminapi.CassandraBackend = adminBackend{}

func (b adminBackend) CassandraRing(ctx context.Context) (adminapi.CassandraRing, error) {
	v, err := b.Node.CassandraRing(ctx)
	return v, sidecarErr(err)
}

func (b adminBackend) CassandraImport(ctx context.Context, req adminapi.CassandraImportRequest) (adminapi.CassandraImportResult, error) {
	r, err := b.Node.CassandraImport(ctx, req)
	return r, sidecarErr(err)
}

func (b adminBackend) StartCassandraRebuild(req adminapi.CassandraRebuildRequest) (OpStatus, error) {
	st, err := b.Node.StartCassandraRebuild(req)
	if errors.Is(err, ErrNotSidecar) {
		return st, sidecarErr(err)
	}
	return opErr(st, err)
}

func (b adminBackend) StartCassandraLoad(req adminapi.CassandraLoadRequest) (OpStatus, error) {
	st, err := b.Node.StartCassandraLoad(req)
	if errors.Is(err, ErrNotSidecar) || errors.Is(err, ErrNoRing) {
		return st, sidecarErr(err)
	}
	return opErr(st, err)
}

func sidecarErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrNotSidecar):
		return adminapi.Conflict(err)
	case errors.Is(err, ErrNoRing):
		return &adminapi.Error{Status: http.StatusServiceUnavailable, Err: err}
	}
	return adminErr(err)
}

// driverLog passes the driver's messages to the node's log at debug level.
type driverLog struct{ log zerolog.Logger }

func (d driverLog) Print(v ...any) { d.log.Debug().Msg(strings.TrimSpace(fmt.Sprint(v...))) }
func (d driverLog) Printf(format string, v ...any) {
	d.log.Debug().Msg(strings.TrimSpace(fmt.Sprintf(format, v...)))
}
func (d driverLog) Println(v ...any) { d.log.Debug().Msg(strings.TrimSpace(fmt.Sprintln(v...))) }

func (b adminBackend) StartCassandraReplace(req adminapi.CassandraReplaceRequest) (OpStatus, error) {
	st, err := b.Node.StartCassandraReplace(req)
	if errors.Is(err, ErrNotSidecar) {
		return st, sidecarErr(err)
	}
	return opErr(st, err)
}
