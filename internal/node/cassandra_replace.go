package node

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/sluicedb/sluice/internal/adminapi"
	"github.com/sluicedb/sluice/internal/cassandra"
	"github.com/sluicedb/sluice/internal/catalog"
	"github.com/sluicedb/sluice/internal/lib/fsx"
	"github.com/sluicedb/sluice/internal/ops"
	"github.com/sluicedb/sluice/membership/gossip"
	"github.com/sluicedb/sluice/sstable/descriptor"
	"github.com/sluicedb/sluice/sstable/token"
)

// The sidecar's replace (sluice cassandra replace DEAD --into DIR, POST
// /v1/cassandra/replace) fills the data directory of a replacement Cassandra node before its
// first start: every range the dead node replicated, from other live replicas' sidecars. It
// is sluice's rebuild (ops.Cluster.Rebuild) over the Cassandra ring with the ring playing
// the dead node's part (cassandraRing.as: its ranges, its DC, its data coming to this
// sidecar), landed by replaceInstall: each table's ranges are fetched into a scratch
// directory inside DIR (DIR/.sluice-replace-<id>/<n>/<keyspace>/<table>-<id>/, the stream
// receiver's atomic installs), every sstable verified strictly, then moved into
// DIR/<keyspace>/<table>-<id>/ under a fresh generation, every component but Data.db first
// and Data.db last, each step synced: Cassandra removes at start-up a component set without a
// Data.db (ColumnFamilyStore.scrubDataDirectories), so a crash never leaves a half-written
// sstable it would open. The ring is read from the sidecar's own node or, for a replacement
// whose node has not started, from another live node (CassandraReplaceRequest.Native). The
// Cassandra side of the workflow (auto_bootstrap: false, replace_address_first_boot,
// allow_unsafe_replace) and its risks are in docs/OPERATIONS.md.

// OpCassandraReplace is the kind of a sidecar's replace.
const OpCassandraReplace = adminapi.OpCassandraReplace

// ReplaceScratchPrefix starts the name of a replace's scratch directory inside DIR; a run of
// replace into DIR removes what an interrupted one left.
const ReplaceScratchPrefix = ".sluice-replace-"

// ReplaceJournalFile is the replace's journal inside DIR: each table's ranges once moved into
// DIR, so that a replace run again after a failure, with the same plan, fetches only the rest
// (a sweep of DIR keeps it). A replace that completes removes it, before Cassandra's first
// start sees DIR.
const ReplaceJournalFile = ".sluice-journal-replace.json"

// StartCassandraReplace checks a replace request and starts it.
func (n *Node) StartCassandraReplace(req adminapi.CassandraReplaceRequest) (OpStatus, error) {
	s, c, err := n.sidecarWithCluster()
	if err != nil {
		return OpStatus{}, err
	}
	// The sidecar's own data directories are live unless its node is not running at all (the
	// sidecar of the replacement itself, whose node has not started: DIR is then one of them).
	live := s.dirs
	if conn, err := net.DialTimeout("tcp", s.cfg.NativeAddress, 2*time.Second); err == nil {
		conn.Close()
	} else if errors.Is(err, syscall.ECONNREFUSED) {
		live = nil
	}
	if err := checkReplaceRequest(req, live); err != nil {
		return OpStatus{}, badRequest{err}
	}
	into := filepath.Clean(req.Into)
	detail := strings.TrimSpace(req.Dead + " into " + into + " " + req.Keyspace)
	return n.tracker.Start(OpCassandraReplace, detail, func(ctx context.Context, o *ops.Op) error {
		return n.cassandraReplace(ctx, o, s, c, req, into)
	})
}

// checkReplaceRequest refuses a request without a dead node, a directory that is not an
// absolute path or that overlaps a live data directory of this sidecar's node, a bad native
// address or a system keyspace.
func checkReplaceRequest(req adminapi.CassandraReplaceRequest, live []string) error {
	if strings.TrimSpace(req.Dead) == "" {
		return errors.New("replace: name the dead node (its address or host id)")
	}
	if !filepath.IsAbs(req.Into) {
		return fmt.Errorf("replace: --into %q: want an absolute path on the sidecar's host", req.Into)
	}
	into := filepath.Clean(req.Into)
	for _, d := range live {
		d = filepath.Clean(d)
		sep := string(filepath.Separator)
		if into == d || strings.HasPrefix(into, d+sep) || strings.HasPrefix(d, into+sep) {
			return fmt.Errorf("replace: --into %s overlaps data file directory %s of the sidecar's node, which accepts connections: a replace fills the directory of a node that has not started", into, d)
		}
	}
	if req.Native != "" {
		if h, p, err := net.SplitHostPort(req.Native); err != nil || h == "" || p == "" {
			return fmt.Errorf("replace: native address %q: want host:port", req.Native)
		}
	}
	if req.Keyspace != "" && isSystemKeyspace(req.Keyspace) {
		return fmt.Errorf("replace: %s is a system keyspace", req.Keyspace)
	}
	return nil
}

func (n *Node) cassandraReplace(ctx context.Context, o *ops.Op, s *sidecar, c *cluster, req adminapi.CassandraReplaceRequest, into string) error {
	log := s.log.With().Str("op", OpCassandraReplace).Str("into", into).Logger()
	read, remote := s.snapshot, false
	if req.Native != "" {
		read, remote = s.readFrom(req.Native), true
	}
	snap, stale, err := read(ctx)
	if err != nil {
		return err
	}
	if stale != "" {
		return fmt.Errorf("%w: %s", ErrNoRing, stale)
	}
	dead, err := findDead(snap, req.Dead)
	if err != nil {
		return badRequest{err}
	}
	log.Info().Str("dead", dead.HostID).Str("address", dead.Address).Int("tokens", len(dead.Tokens)).Str("dc", dead.DC).
		Msg("replace: filling the replacement's data directory with the dead node's ranges")
	if err := os.MkdirAll(into, 0o755); err != nil {
		return err
	}
	if swept, err := sweepReplaceDir(into); err != nil {
		return err
	} else if swept > 0 {
		log.Info().Int("scratch_dirs", swept).Msg("replace: removed what an interrupted replace left")
	}
	id, err := randomID()
	if err != nil {
		return err
	}
	scratch := filepath.Join(into, ReplaceScratchPrefix+id)
	defer func() {
		if err := os.RemoveAll(scratch); err != nil {
			log.Warn().Err(err).Str("dir", scratch).Msg("removing the replace's scratch directory")
		}
	}()
	r := &cassandraRing{s: s, self: n.cfg.Name, members: c.g.Members, log: log, as: dead.HostID, readRing: read, remote: remote}
	oc := &ops.Cluster{Ring: r, Peers: c.peers, Local: n.local, Log: log, Journal: filepath.Join(into, ReplaceJournalFile),
		Install: &replaceInstall{n: n, c: c, scratch: scratch, into: into}}
	return oc.Rebuild(ctx, o, RebuildRequest{Keyspace: req.Keyspace})
}

// readFrom reads the ring once from the Cassandra node at native (the sidecar's credentials
// and TLS settings).
func (s *sidecar) readFrom(native string) func(ctx context.Context) (cassandra.Snapshot, string, error) {
	return func(ctx context.Context) (cassandra.Snapshot, string, error) {
		cfg := s.cfg
		cfg.NativeAddress = native
		r, err := cassandra.Dial(ctx, cfg, driverLog{s.log})
		if err != nil {
			return cassandra.Snapshot{}, "", fmt.Errorf("reading the ring from %s: %w", native, err)
		}
		defer r.Close()
		snap, err := r.Read(ctx)
		if err != nil {
			return cassandra.Snapshot{}, "", fmt.Errorf("reading the ring from %s: %w", native, err)
		}
		return snap, "", nil
	}
}

// findDead is the node of snap named by dead: its host id, or its broadcast, listen or
// native address. It must own tokens and not be UP.
func findDead(snap cassandra.Snapshot, dead string) (cassandra.Node, error) {
	want := dead
	if ip := net.ParseIP(dead); ip != nil {
		want = ip.String()
	}
	for _, n := range snap.Nodes {
		match := strings.EqualFold(n.HostID, dead)
		for _, a := range []string{n.Address, n.ListenAddress, n.NativeAddress} {
			if ip := net.ParseIP(a); ip != nil && ip.String() == want || a != "" && a == dead {
				match = true
			}
		}
		if !match {
			continue
		}
		switch {
		case n.Local || n.State == cassandra.Up:
			return n, fmt.Errorf("Cassandra node %s (%s) is UP: only a dead node is replaced", n.Address, n.HostID)
		case len(n.Tokens) == 0:
			return n, fmt.Errorf("Cassandra node %s (%s) owns no tokens in the ring read", n.Address, n.HostID)
		}
		return n, nil
	}
	return cassandra.Node{}, fmt.Errorf("no node of the ring (system.local, system.peers_v2) is %s", dead)
}

// sweepReplaceDir removes what an interrupted replace left in into: its scratch directories
// (it returns how many), and in every <keyspace>/<table>-<id> directory the component sets
// without a Data.db (a move cut short before its last step; Cassandra would remove them at
// start-up too).
func sweepReplaceDir(into string) (int, error) {
	scratch, _ := filepath.Glob(filepath.Join(into, ReplaceScratchPrefix+"*"))
	for _, p := range scratch {
		if err := os.RemoveAll(p); err != nil {
			return 0, err
		}
	}
	kss, err := os.ReadDir(into)
	if err != nil {
		return 0, err
	}
	for _, ks := range kss {
		if !ks.IsDir() || strings.HasPrefix(ks.Name(), ".") {
			continue
		}
		tds, err := os.ReadDir(filepath.Join(into, ks.Name()))
		if err != nil {
			return 0, err
		}
		for _, td := range tds {
			if td.IsDir() {
				if err := removeOrphans(filepath.Join(into, ks.Name(), td.Name())); err != nil {
					return 0, err
				}
			}
		}
	}
	return len(scratch), nil
}

// removeOrphans removes the component files in dir of every sstable that has no Data.db.
func removeOrphans(dir string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	byPrefix := map[string][]string{}
	hasData := map[string]bool{}
	for _, e := range ents {
		d, c, err := descriptor.Parse(filepath.Join(dir, e.Name()))
		if err != nil || e.IsDir() {
			continue
		}
		byPrefix[d.Prefix()] = append(byPrefix[d.Prefix()], filepath.Join(dir, e.Name()))
		if c == descriptor.Data {
			hasData[d.Prefix()] = true
		}
	}
	for p, files := range byPrefix {
		if hasData[p] {
			continue
		}
		for _, f := range files {
			if err := os.Remove(f); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
	}
	return fsx.SyncDir(dir)
}

// replaceInstall is the install step of a replace: each table's ranges are fetched from the
// source's sidecar into a scratch directory of their own inside DIR, verified strictly, and
// moved into DIR/<keyspace>/<table>-<id>/ (installReplaced).
type replaceInstall struct {
	n       *Node
	c       *cluster
	scratch string
	into    string
	next    atomic.Int64
	locks   sync.Map // table directory → *sync.Mutex
}

var _ ops.Installer = (*replaceInstall)(nil)

func (ri *replaceInstall) Install(ctx context.Context, o *ops.Op, to string, req FetchOpRequest) (FetchOpResponse, error) {
	n := ri.n
	if to != n.cfg.Name {
		return FetchOpResponse{}, fmt.Errorf("a replace fills this sidecar's directory, not %s's", to)
	}
	rs, err := token.ParseRanges(token.Murmur3, req.Ranges)
	if err != nil {
		return FetchOpResponse{}, err
	}
	src, err := ri.source(req.Source)
	if err != nil {
		return FetchOpResponse{}, err
	}
	base := filepath.Join(ri.scratch, fmt.Sprint(ri.next.Add(1)))
	defer os.RemoveAll(base)
	dir := filepath.Join(base, req.Keyspace, req.Table+"-"+req.TableID)
	res, err := n.fetchFrom(ctx, src, "", req.Keyspace, req.Table, rs, dir)
	out := FetchOpResponse{Dir: dir, SSTables: []string{}}
	if res != nil {
		for _, f := range res.SSTables {
			out.SSTables = append(out.SSTables, f.Path)
		}
		out.BytesReceived = res.BytesReceived
	}
	if err != nil {
		return out, fmt.Errorf("fetch: %w", err)
	}
	if len(res.SSTables) == 0 {
		return out, nil
	}
	parts := map[string]int64{}
	for _, f := range res.SSTables {
		parts[f.Path] = f.Partitions
	}
	table := filepath.Join(ri.into, req.Keyspace, req.Table+"-"+req.TableID)
	mu, _ := ri.locks.LoadOrStore(table, &sync.Mutex{})
	mu.(*sync.Mutex).Lock()
	defer mu.(*sync.Mutex).Unlock()
	// What the receiver verified strictly on arrival is not read again (skipVerified).
	moved, err := installReplaced(ctx, dir, table, skipVerified(strictlyVerified(res.SSTables)))
	o.Update(func(st *OpStatus) {
		for _, m := range moved {
			st.Imported = append(st.Imported, ImportedSSTable{Source: req.Source + ":" + filepath.Base(m.from), SSTable: m.to, Partitions: parts[m.from]})
		}
	})
	if err != nil {
		return out, fmt.Errorf("install into %s: %w", table, err)
	}
	return out, nil
}

// source is the member to fetch from: this sidecar itself (its own node is a replica), or a
// proven member.
func (ri *replaceInstall) source(name string) (gossip.Member, error) {
	if name == ri.n.cfg.Name {
		if ri.n.stream == nil {
			return gossip.Member{}, errors.New("node: no stream server")
		}
		return gossip.Member{Name: name, Meta: gossip.NodeMeta{StreamAddr: ri.n.stream.Addr().String()}}, nil
	}
	return proven(ri.c.members(), name)
}

// movedSSTable is one sstable a replace put in place: its scratch descriptor prefix and its
// Data.db in the table directory.
type movedSSTable struct{ from, to string }

// installReplaced verifies every complete sstable of dir with verify and, only when all pass,
// moves them into table under fresh generations: every component but Data.db, a sync of the
// directory, then Data.db and a sync, so that a crash leaves either the whole sstable or a
// set without Data.db, which Cassandra removes at start-up (and sweepReplaceDir too). Both
// directories must be on one file system (the moves are links). An sstable already moved
// stays when a later one fails.
func installReplaced(ctx context.Context, dir, table string, verify func(dataPath string) error) ([]movedSSTable, error) {
	live, err := catalog.ListLive(dir)
	if err != nil {
		return nil, err
	}
	for _, s := range live {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := verify(s.Desc.Path(descriptor.Data)); err != nil {
			return nil, fmt.Errorf("%w: %s: %v (nothing of this transfer installed)", cassandra.ErrVerify, s.Desc.Prefix(), err)
		}
	}
	if err := os.MkdirAll(table, 0o755); err != nil {
		return nil, err
	}
	if err := fsx.SyncDir(filepath.Dir(table)); err != nil {
		return nil, err
	}
	var out []movedSSTable
	for _, s := range live {
		gen, err := descriptor.NextGeneration(table)
		if err != nil {
			return out, err
		}
		nd := descriptor.Descriptor{Dir: table, Version: s.Desc.Version, ID: strconv.Itoa(gen)}
		if err := moveSSTable(s, nd); err != nil {
			return out, fmt.Errorf("%s: %w", s.Desc.Prefix(), err)
		}
		out = append(out, movedSSTable{from: s.Desc.Prefix(), to: nd.Path(descriptor.Data)})
	}
	return out, nil
}

// moveSSTable links s's components to nd's names (never over an existing file), Data.db last,
// syncing the directory before and after it, then removes s's names. On a failure it removes
// what it linked.
func moveSSTable(s catalog.LiveSSTable, nd descriptor.Descriptor) error {
	var linked []string
	undo := func(err error) error {
		for _, p := range linked {
			os.Remove(p)
		}
		return errors.Join(err, fsx.SyncDir(nd.Dir))
	}
	hasData := false
	for _, c := range s.Comps {
		if c == descriptor.Data {
			hasData = true
			continue
		}
		if err := os.Link(s.Desc.Path(c), nd.Path(c)); err != nil {
			return undo(err)
		}
		linked = append(linked, nd.Path(c))
	}
	if !hasData {
		return undo(errors.New("its TOC lists no Data.db"))
	}
	if err := fsx.SyncDir(nd.Dir); err != nil {
		return undo(err)
	}
	if err := os.Link(s.Desc.Path(descriptor.Data), nd.Path(descriptor.Data)); err != nil {
		return undo(err)
	}
	if err := fsx.SyncDir(nd.Dir); err != nil {
		return err // Data.db is linked: the sstable is complete, only its durability is in doubt
	}
	for _, c := range s.Comps {
		os.Remove(s.Desc.Path(c))
	}
	return nil
}
