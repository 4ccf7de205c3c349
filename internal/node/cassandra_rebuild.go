package node

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicedb/sluice/internal/adminapi"
	"github.com/sluicedb/sluice/internal/ops"
	"github.com/sluicedb/sluice/membership/gossip"
	"github.com/sluicedb/sluice/sstable/token"
	"github.com/sluicedb/sluice/stream"
)

// The sidecar's rebuild (sluice cassandra rebuild, POST /v1/cassandra/rebuild), what nodetool
// rebuild does, is sluice's rebuild (ops.Cluster.Rebuild) run over the Cassandra ring
// (cassandraRing): every range the local Cassandra node replicates is fetched from another
// live replica's sidecar with the stream protocol, table by table, into
// <staging>/rebuild-<random>/<n>/<keyspace>/<table>-<id>/ (the staging directory on the file
// system of the data directory that will hold it: with several, the ranges are cut at
// Cassandra's disk boundaries, cassandra_disks.go), then handed to the live node by the
// Importer (cassandraInstall: strict
// verification, nodetool import, confirmation by inode), and the staging directory is
// removed. The sending sidecars serve their node's live sstables through hard-link holds as
// for any fetch. Its journal (RebuildJournalFile, in the staging directory, never beside
// Cassandra's data) records each table's ranges once imported, so that a rebuild run again
// after a failure, with the same plan, fetches only what was not imported yet; a rebuild that
// completes removes it.

// OpCassandraRebuild is the kind of a sidecar's rebuild.
const OpCassandraRebuild = adminapi.OpCassandraRebuild

// RebuildJournalFile is the rebuild's journal in the staging directory.
const RebuildJournalFile = "sluice-rebuild-journal.json"

// RebuildStagingPrefix starts the name of a rebuild's directory in the staging directory.
// What a crash leaves there was never handed to Cassandra (the Importer moves sstables out
// before nodetool sees them): start-up removes it.
const RebuildStagingPrefix = "rebuild-"

// sidecarWithCluster is what a sidecar's cluster operation (rebuild, replace, load) needs:
// the sidecar, and gossip with the other sidecars.
func (n *Node) sidecarWithCluster() (*sidecar, *cluster, error) {
	if n.sidecar == nil {
		return nil, nil, ErrNotSidecar
	}
	c, err := n.requireCluster()
	if err != nil {
		return nil, nil, err
	}
	return n.sidecar, c, nil
}

// StartCassandraRebuild starts a sidecar's rebuild. It needs gossip (the other sidecars are
// its members); the plan is made when the operation starts, from a fresh ring read.
func (n *Node) StartCassandraRebuild(req adminapi.CassandraRebuildRequest) (OpStatus, error) {
	s, c, err := n.sidecarWithCluster()
	if err != nil {
		return OpStatus{}, err
	}
	if req.Keyspace != "" && isSystemKeyspace(req.Keyspace) {
		return OpStatus{}, badRequest{fmt.Errorf("rebuild: %s is a system keyspace", req.Keyspace)}
	}
	detail := strings.TrimSpace(req.SourceDC + " " + req.Keyspace)
	return n.tracker.Start(OpCassandraRebuild, detail, func(ctx context.Context, o *ops.Op) error {
		return n.cassandraRebuild(ctx, o, s, c, req)
	})
}

func (n *Node) cassandraRebuild(ctx context.Context, o *ops.Op, s *sidecar, c *cluster, req adminapi.CassandraRebuildRequest) error {
	log := s.log.With().Str("op", OpCassandraRebuild).Logger()
	id, err := randomID()
	if err != nil {
		return err
	}
	defer func() {
		for _, st := range s.cfg.StagingDirs {
			root := filepath.Join(st, RebuildStagingPrefix+id)
			if err := os.RemoveAll(root); err != nil {
				log.Warn().Err(err).Str("dir", root).Msg("removing the rebuild's staging directory")
			}
		}
	}()
	r := &cassandraRing{s: s, self: n.cfg.Name, members: c.g.Members, log: log}
	if err := os.MkdirAll(s.cfg.StagingDir, 0o755); err != nil {
		return fmt.Errorf("staging directory: %w", err)
	}
	oc := &ops.Cluster{Ring: r, Peers: c.peers, Local: n.local, Log: log, Journal: filepath.Join(s.cfg.StagingDir, RebuildJournalFile),
		Install: &cassandraInstall{n: n, c: c, ring: r, id: id}}
	return oc.Rebuild(ctx, o, RebuildRequest{SourceDC: req.SourceDC, Keyspace: req.Keyspace})
}

// cassandraInstall is the install step of a stream plan over the Cassandra ring: each table's
// ranges are fetched from the source's sidecar into directories of their own,
// <staging>/<RebuildStagingPrefix><id>/<n>/ in the staging directory of each data directory's
// share (cassandra_disks.go), and what arrived is handed to the live node by the Importer, one
// import of a table at a time.
type cassandraInstall struct {
	n     *Node
	c     *cluster
	ring  *cassandraRing
	id    string
	next  atomic.Int64
	locks sync.Map // keyspace.table → *sync.Mutex
}

func (ci *cassandraInstall) Install(ctx context.Context, o *ops.Op, to string, req FetchOpRequest) (FetchOpResponse, error) {
	n := ci.n
	if to != n.cfg.Name {
		return FetchOpResponse{}, fmt.Errorf("a sidecar imports only into its own Cassandra node, not %s's", to)
	}
	rs, err := token.ParseRanges(token.Murmur3, req.Ranges)
	if err != nil {
		return FetchOpResponse{}, err
	}
	src, err := proven(ci.c.members(), req.Source)
	if err != nil {
		return FetchOpResponse{}, err
	}
	k := fmt.Sprint(ci.next.Add(1))
	mu, _ := ci.locks.LoadOrStore(req.Keyspace+"."+req.Table, &sync.Mutex{})
	snap, _, _ := ci.ring.read()
	start := time.Now()
	res, err := n.receive(ctx, snap, receiveSpec{src: src, keyspace: req.Keyspace, table: req.Table, tableID: req.TableID, ranges: rs,
		base:      func(staging string) string { return filepath.Join(staging, RebuildStagingPrefix+ci.id, k) },
		importCtx: func() (context.Context, context.CancelFunc) { return context.WithTimeout(ctx, importTimeout) },
		lock:      mu.(*sync.Mutex)})
	out := FetchOpResponse{Dir: filepath.Join(n.sidecar.cfg.StagingDir, RebuildStagingPrefix+ci.id, k, req.Keyspace, req.Table+"-"+req.TableID), SSTables: []string{}, BytesReceived: res.bytes}
	parts := map[string]int64{}
	for _, f := range res.fetched {
		out.SSTables = append(out.SSTables, f.Path)
		parts[f.Path] = f.Partitions
	}
	o.Update(func(st *OpStatus) {
		for _, s := range res.imported {
			st.Imported = append(st.Imported, ImportedSSTable{Source: req.Source + ":" + filepath.Base(s.Source), SSTable: s.Live, Partitions: parts[s.Source]})
		}
	})
	if err != nil {
		return out, err
	}
	if len(res.imported) > 0 {
		n.sidecar.log.Info().Str("keyspace", req.Keyspace).Str("table", req.Table).Str("from", req.Source).
			Int("sstables", len(res.imported)).Int64("bytes", res.bytes).Float64("fetch_seconds", res.fetch.Seconds()).
			Float64("import_seconds", (time.Since(start) - res.fetch).Seconds()).Msg("rebuilt: fetched and imported")
	}
	return out, nil
}

var _ ops.Installer = (*cassandraInstall)(nil)

// fetchFrom pulls keyspace.table's ranges from member src's stream server into dir, as a
// node's fetch does (the member proves its name with the cluster CA; the session is failed at
// once when membership declares the member down) but into any directory: the sidecar's
// staging, never a live table directory. source names sstables src registered under that id
// (a load) instead of its live table's.
func (n *Node) fetchFrom(ctx context.Context, src gossip.Member, source, keyspace, table string, rs token.RangeSet, dir string) (*stream.FetchResult, error) {
	peer, err := streamAddr(src)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	res, err := n.streamFetch(ctx, src.Name, stream.FetchRequest{Peer: peer, Keyspace: keyspace, Table: table, Ranges: rs, Dir: dir, Source: source})
	if res != nil {
		n.sidecar.log.Debug().Str("keyspace", keyspace).Str("table", table).Str("from", src.Name).Int("sstables", len(res.SSTables)).
			Int64("bytes", res.BytesReceived).Dur("took", time.Since(start)).Msg("fetched into staging")
	}
	return res, err
}
