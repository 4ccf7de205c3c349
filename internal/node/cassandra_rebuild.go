package node

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/sluicedb/sluice/internal/adminapi"
	"github.com/sluicedb/sluice/internal/cassandra"
	"github.com/sluicedb/sluice/membership/gossip"
	"github.com/sluicedb/sluice/sstable/token"
	"github.com/sluicedb/sluice/stream"
)

// The sidecar's rebuild (sluice cassandra rebuild, POST /v1/cassandra/rebuild), what nodetool
// rebuild does: every range the local Cassandra node replicates is fetched from another live
// replica's sidecar (planCassandraRebuild) with the stream protocol, table by table, into
// <staging_dir>/rebuild-<random>/<keyspace>/<table>-<id>/ (on the data directories' file
// system), then handed to the live node by the Importer (strict verification, nodetool
// import, confirmation by inode), and the staging directory is removed. The sending sidecars
// serve their node's live sstables through hard-link holds as for any fetch.

// OpCassandraRebuild is the kind of a sidecar's rebuild.
const OpCassandraRebuild = adminapi.OpCassandraRebuild

// RebuildStagingPrefix starts the name of a rebuild's directory in the staging directory.
// What a crash leaves there was never handed to Cassandra (the Importer moves sstables out
// before nodetool sees them): start-up removes it.
const RebuildStagingPrefix = "rebuild-"

// StartCassandraRebuild starts a sidecar's rebuild. It needs gossip (the other sidecars are
// its members); the plan is made when the operation starts, from a fresh ring read.
func (n *Node) StartCassandraRebuild(req adminapi.CassandraRebuildRequest) (OpStatus, error) {
	s := n.sidecar
	if s == nil {
		return OpStatus{}, ErrNotSidecar
	}
	c, err := n.requireCluster()
	if err != nil {
		return OpStatus{}, err
	}
	if req.Keyspace != "" && isSystemKeyspace(req.Keyspace) {
		return OpStatus{}, badRequest{fmt.Errorf("rebuild: %s is a system keyspace", req.Keyspace)}
	}
	detail := strings.TrimSpace(req.SourceDC + " " + req.Keyspace)
	return n.startOp(OpCassandraRebuild, detail, func(ctx context.Context, o *op) error {
		return n.cassandraRebuild(ctx, o, s, c, req)
	})
}

// cassRebuildTask is one table of one job: fetched, then imported.
type cassRebuildTask struct {
	job     cassRebuildJob
	table   cassandra.Table
	transfr int // index in the op's Transfers
}

func (n *Node) cassandraRebuild(ctx context.Context, o *op, s *sidecar, c *cluster, req adminapi.CassandraRebuildRequest) error {
	snap, stale, err := s.snapshot(ctx)
	if err != nil {
		return err
	}
	if stale != "" {
		return fmt.Errorf("%w: %s", ErrNoRing, stale)
	}
	up, unavailable := upSidecars(snap, n.cfg.Name, c.g.Members())
	plan, err := planCassandraRebuild(snap, up, unavailable, req.SourceDC, req.Keyspace)
	if err != nil {
		return err
	}
	log := s.log.With().Str("op", OpCassandraRebuild).Logger()
	for _, sk := range plan.Skipped {
		log.Info().Str("keyspace", sk).Msg("keyspace not rebuilt")
	}
	var raw [6]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return err
	}
	root := filepath.Join(s.cfg.StagingDir, RebuildStagingPrefix+hex.EncodeToString(raw[:]))
	defer func() {
		if err := os.RemoveAll(root); err != nil {
			log.Warn().Err(err).Str("dir", root).Msg("removing the rebuild's staging directory")
		}
	}()

	// Every table of the keyspace that the source holds sstables of, under the schema's id.
	var tasks []cassRebuildTask
	var errs []error
	for _, j := range plan.Jobs {
		held, err := c.peers.tables(ctx, j.Sidecar, j.Keyspace)
		if err != nil {
			errs = append(errs, fmt.Errorf("keyspace %s: listing the tables of %s (%s): %w", j.Keyspace, j.Sidecar, j.Source, err))
			o.update(func(st *OpStatus) {
				st.Transfers = append(st.Transfers, TransferStatus{From: j.Sidecar, To: n.cfg.Name, Keyspace: j.Keyspace, Table: "*",
					Ranges: j.Ranges.String(), State: OpFailed, Error: err.Error()})
			})
			continue
		}
		for _, tb := range snap.Tables {
			if tb.Keyspace != j.Keyspace || !holdsSSTables(held, tb) {
				continue
			}
			t := cassRebuildTask{job: j, table: tb}
			o.update(func(st *OpStatus) {
				t.transfr = len(st.Transfers)
				st.Transfers = append(st.Transfers, TransferStatus{From: j.Sidecar, To: n.cfg.Name, Keyspace: tb.Keyspace, Table: tb.Name,
					Ranges: j.Ranges.String(), State: OpRunning})
			})
			tasks = append(tasks, t)
		}
	}
	log.Info().Int("sources", len(plan.Jobs)).Int("tables", len(tasks)).Msg("rebuilding from other replicas' sidecars")

	im := s.importer(snap)
	var locks sync.Map // keyspace.table → *sync.Mutex: one import of a table at a time
	terrs := eachTransfer(ctx, len(tasks), func(i int, waited error) error {
		t := tasks[i]
		if waited != nil {
			o.update(func(st *OpStatus) {
				st.Transfers[t.transfr].State, st.Transfers[t.transfr].Error = OpFailed, waited.Error()
			})
			return waited
		}
		mu, _ := locks.LoadOrStore(t.table.Keyspace+"."+t.table.Name, &sync.Mutex{})
		return n.rebuildTable(ctx, o, c, im, mu.(*sync.Mutex), t, filepath.Join(root, fmt.Sprint(i)))
	})
	for i, err := range terrs {
		if err != nil {
			t := tasks[i]
			errs = append(errs, fmt.Errorf("%s.%s from %s %s: %w", t.table.Keyspace, t.table.Name, t.job.Sidecar, t.job.Ranges, err))
		}
	}
	return errors.Join(errs...)
}

// holdsSSTables reports whether held (a source's tables) has live sstables of tb under its
// schema id.
func holdsSSTables(held []TableStatus, tb cassandra.Table) bool {
	for _, h := range held {
		if h.Keyspace == tb.Keyspace && h.Table == tb.Name && h.ID == tb.ID && h.SSTables > 0 {
			return true
		}
	}
	return false
}

// rebuildTable fetches one table's ranges from the job's source into
// <base>/<keyspace>/<table>-<id>/ and imports what arrived; it removes base.
func (n *Node) rebuildTable(ctx context.Context, o *op, c *cluster, im *cassandra.Importer, mu *sync.Mutex, t cassRebuildTask, base string) (err error) {
	defer os.RemoveAll(base)
	set := func(f func(ts *TransferStatus)) { o.update(func(st *OpStatus) { f(&st.Transfers[t.transfr]) }) }
	defer func() {
		set(func(ts *TransferStatus) {
			ts.State = OpComplete
			if err != nil {
				ts.State, ts.Error = OpFailed, err.Error()
			}
		})
	}()
	src, err := proven(c.members(), t.job.Sidecar)
	if err != nil {
		return err
	}
	dir := filepath.Join(base, t.table.Keyspace, t.table.Name+"-"+t.table.ID)
	res, err := n.fetchFrom(ctx, src, "", t.table.Keyspace, t.table.Name, t.job.Ranges, dir)
	if res != nil {
		set(func(ts *TransferStatus) { ts.SSTables, ts.BytesReceived = len(res.SSTables), res.BytesReceived })
	}
	if err != nil {
		return fmt.Errorf("fetch: %w", err)
	}
	if len(res.SSTables) == 0 {
		return nil // no partition of the table in these ranges
	}
	fetched := time.Now()
	mu.Lock()
	defer mu.Unlock()
	ictx, cancel := context.WithTimeout(ctx, importTimeout)
	defer cancel()
	ir, err := im.Import(ictx, cassandra.ImportRequest{Keyspace: t.table.Keyspace, Table: t.table.Name, TableID: t.table.ID, Dir: dir})
	if err != nil {
		return fmt.Errorf("import: %w", err)
	}
	parts := map[string]int64{}
	for _, f := range res.SSTables {
		parts[f.Path] = f.Partitions
	}
	n.sidecar.log.Info().Str("keyspace", t.table.Keyspace).Str("table", t.table.Name).Str("from", t.job.Sidecar).
		Int("sstables", len(ir.SSTables)).Int64("bytes", res.BytesReceived).Float64("fetch_seconds", res.Wall.Seconds()).
		Float64("import_seconds", time.Since(fetched).Seconds()).Msg("rebuilt: fetched and imported")
	o.update(func(st *OpStatus) {
		for _, s := range ir.SSTables {
			st.Imported = append(st.Imported, ImportedSSTable{Source: t.job.Sidecar + ":" + filepath.Base(s.Source), SSTable: s.Live, Partitions: parts[s.Source]})
		}
	})
	return nil
}

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
