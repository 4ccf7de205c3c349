package node

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/sluicedb/sluice/internal/adminapi"
	"github.com/sluicedb/sluice/internal/cassandra"
	"github.com/sluicedb/sluice/internal/catalog"
	"github.com/sluicedb/sluice/internal/lib/cqlname"
	"github.com/sluicedb/sluice/internal/lib/fsx"
	"github.com/sluicedb/sluice/internal/lib/tlsx"
	"github.com/sluicedb/sluice/internal/peerrpc"
	"github.com/sluicedb/sluice/membership/gossip"
	"github.com/sluicedb/sluice/membership/ring"
	"github.com/sluicedb/sluice/sstable/descriptor"
	"github.com/sluicedb/sluice/sstable/token"
)

// The sidecar's load (sluice cassandra load, POST /v1/cassandra/load), what sstableloader
// does, zero-copy and pulled: the loading sidecar stages the sstables of the given
// directories under <staging_dir>/load-<id>/<keyspace>/<table>-<id>/ (hard links; copies
// across file systems), registers them in its catalog as source <id> (served only to
// requests naming it: wire.StreamRequest.Source), and asks the sidecar of every replica
// (itself included) with the peer call cassandra_load to fetch the ranges it replicates
// from that source into its own staging directory and import them (the Importer: strict
// verification, nodetool import, confirmation). Then the source is unregistered and the
// staged links removed; the directories given are left as they were.
//
// Before anything is staged, every source sstable is verified strictly: a damaged one is
// refused by its path (cassandra_load_verify.go). Every transfer a replica confirms is
// journaled; the same load run again resumes, sending only the rest (cassandra_load_journal.go).

// OpCassandraLoad is the kind of a sidecar's load.
const OpCassandraLoad = adminapi.OpCassandraLoad

// Names in the staging directory: a loader's staged source, and what a replica received.
// Neither was handed to Cassandra as such (the Importer moves sstables out first): start-up
// removes both.
const (
	LoadStagingPrefix  = "load-"
	LoadReceivedPrefix = "loadin-"
)

// CassandraLoadPeerRequest is the peer call cassandra_load: fetch Ranges of
// Keyspace.Table from the caller's source LoadID and import them into the live node.
type CassandraLoadPeerRequest struct {
	LoadID   string `json:"load_id"`
	Keyspace string `json:"keyspace"`
	Table    string `json:"table"`
	TableID  string `json:"table_id"` // the loader's schema id; the callee's must match
	Ranges   string `json:"ranges"`
}

// CassandraLoadPeerResponse is what a cassandra_load call imported.
type CassandraLoadPeerResponse struct {
	SSTables      int      `json:"sstables"`
	BytesReceived int64    `json:"bytes_received"`
	Imported      []string `json:"imported"` // Data.db paths in the live table directory
	// Recorded: imported by an earlier ask of the same load (the replica's record), not now.
	Recorded bool `json:"recorded,omitempty"`
}

// loadTable is one table of a load: the directories of its sstables, and its schema id.
type loadTable struct {
	Keyspace, Table, ID string
	Dirs                []string
	Skip                map[string]bool // Data.db paths refused by verifyLoadSources: not staged
}

// cassLoadJob is every range one replica takes of one keyspace.
type cassLoadJob struct {
	Keyspace string
	Replica  string // host id
	Address  string // its address in the ring read
	Sidecar  string // its sidecar; "" when it has none up (Why)
	Why      string
	Ranges   token.RangeSet
}

// planCassandraLoad gives, per keyspace of keyspaces, every replica of the ring (the local
// node included, its sidecar self) the ranges it replicates. A replica without a sidecar up
// (not in sidecars, host id → member name) has Why instead of Sidecar.
func planCassandraLoad(snap cassandra.Snapshot, sidecars, unavailable map[string]string, self string, keyspaces []string) ([]cassLoadJob, error) {
	r, _, err := snap.Ring()
	if err != nil {
		return nil, err
	}
	local, _ := snap.LocalNode()
	addrs := map[string]string{}
	for _, cn := range snap.Nodes {
		addrs[cn.HostID] = cn.Address
	}
	var out []cassLoadJob
	for _, ks := range keyspaces {
		s, err := snap.Strategy(ks)
		if err != nil {
			return nil, badRequest{err}
		}
		byReplica := map[string]token.RangeSet{}
		for _, rr := range ring.RangeOwners(r, s) {
			for _, n := range rr.Replicas {
				byReplica[n.Name] = append(byReplica[n.Name], rr.Range)
			}
		}
		for _, host := range slices.Sorted(func(yield func(string) bool) {
			for h := range byReplica {
				if !yield(h) {
					return
				}
			}
		}) {
			j := cassLoadJob{Keyspace: ks, Replica: host, Address: addrs[host], Ranges: ring.Normalize(byReplica[host])}
			switch name, ok := sidecars[host]; {
			case host == local.HostID:
				j.Sidecar = self
			case ok:
				j.Sidecar = name
			default:
				j.Why = cmpOr(unavailable[host], "no sidecar")
			}
			out = append(out, j)
		}
	}
	return out, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// collectLoad finds the tables of a load request in snap's schema.
func collectLoad(snap cassandra.Snapshot, req adminapi.CassandraLoadRequest) ([]loadTable, error) {
	if len(req.Dirs) == 0 {
		return nil, badRequest{errors.New("load: no directory")}
	}
	if (req.Keyspace == "") != (req.Table == "") {
		return nil, badRequest{errors.New("load: keyspace and table go together")}
	}
	byName := map[[2]string]*loadTable{}
	var order [][2]string
	add := func(ks, table, dir string) error {
		if err := cqlname.CheckTable(ks, table); err != nil {
			return badRequest{fmt.Errorf("load: %s: %w", dir, err)}
		}
		if isSystemKeyspace(ks) {
			return badRequest{fmt.Errorf("load: %s: %s is a system keyspace", dir, ks)}
		}
		tb, ok := snap.Table(ks, table)
		if !ok {
			return badRequest{fmt.Errorf("load: %s: the Cassandra node has no table %s.%s", dir, ks, table)}
		}
		k := [2]string{ks, table}
		if byName[k] == nil {
			byName[k] = &loadTable{Keyspace: ks, Table: table, ID: tb.ID}
			order = append(order, k)
		}
		byName[k].Dirs = append(byName[k].Dirs, dir)
		return nil
	}
	for _, dir := range req.Dirs {
		if !filepath.IsAbs(dir) {
			return nil, badRequest{fmt.Errorf("load: dir %q: want an absolute path on the node's host", dir)}
		}
		dir = filepath.Clean(dir)
		live, err := catalog.ListLive(dir)
		if err != nil {
			return nil, badRequest{fmt.Errorf("load: %w", err)}
		}
		switch {
		case req.Keyspace != "":
			if len(live) == 0 {
				return nil, badRequest{fmt.Errorf("load: %s holds no complete sstable", dir)}
			}
			err = add(req.Keyspace, req.Table, dir)
		case len(live) > 0: // <keyspace>/<table>[-<id>]
			ks, table, _, ok := descriptor.TableDir(dir)
			if !ok {
				ks, table = filepath.Base(filepath.Dir(dir)), filepath.Base(dir)
			}
			err = add(ks, table, dir)
		default: // a tree of <keyspace>/<table>-<id>
			tds, terr := catalog.New([]string{dir}, zerolog.Nop()).TableDirs()
			if terr != nil {
				return nil, badRequest{fmt.Errorf("load: %w", terr)}
			}
			found := false
			for _, td := range tds {
				if l, _ := catalog.ListLive(td.Path); len(l) > 0 {
					found = true
					if err = add(td.Keyspace, td.Table, td.Path); err != nil {
						break
					}
				}
			}
			if err == nil && !found {
				err = badRequest{fmt.Errorf("load: %s holds no sstable, nor <keyspace>/<table>-<id> directories of them (name the table with --keyspace and --table)", dir)}
			}
		}
		if err != nil {
			return nil, err
		}
	}
	out := make([]loadTable, 0, len(order))
	for _, k := range order {
		out = append(out, *byName[k])
	}
	return out, nil
}

// stageLoad links the sstables of every table into <root>/<keyspace>/<table>-<id>/, numbered
// 1, 2, ... (sstables of several directories may share a name); a file on another file
// system is copied. Symlinks and other non-regular files are refused.
func stageLoad(root string, tables []loadTable) (map[[2]string]string, error) {
	out := map[[2]string]string{}
	for _, t := range tables {
		dst := filepath.Join(root, t.Keyspace, t.Table+"-"+t.ID)
		if err := os.MkdirAll(dst, 0o755); err != nil {
			return nil, err
		}
		next := 1
		for _, dir := range t.Dirs {
			live, err := catalog.ListLive(dir)
			if err != nil {
				return nil, err
			}
			for _, s := range live {
				if t.Skip[s.Desc.Path(descriptor.Data)] {
					continue
				}
				nd := descriptor.Descriptor{Dir: dst, Version: s.Desc.Version, ID: strconv.Itoa(next)}
				next++
				for _, c := range s.Comps {
					if err := linkOrCopy(s.Desc.Path(c), nd.Path(c)); err != nil {
						return nil, err
					}
				}
			}
		}
		out[[2]string{t.Keyspace, t.Table}] = dst
	}
	return out, nil
}

func linkOrCopy(src, dst string) error {
	fi, err := os.Lstat(src)
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%w: %s", catalog.ErrNotRegular, src)
	}
	err = os.Link(src, dst)
	if !errors.Is(err, syscall.EXDEV) {
		return err
	}
	return fsx.CopyNew(src, dst)
}

func randomID() (string, error) {
	var raw [6]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", err
	}
	return hex.EncodeToString(raw[:]), nil
}

// StartCassandraLoad checks a load request against a fresh ring read and starts the load.
func (n *Node) StartCassandraLoad(req adminapi.CassandraLoadRequest) (OpStatus, error) {
	s, c, err := n.sidecarWithCluster()
	if err != nil {
		return OpStatus{}, err
	}
	base := n.runCtx
	if base == nil {
		base = context.Background()
	}
	ctx, cancel := context.WithTimeout(base, s.cfg.Timeout)
	defer cancel()
	snap, stale, err := s.snapshot(ctx)
	if err != nil {
		return OpStatus{}, err
	}
	if stale != "" {
		return OpStatus{}, fmt.Errorf("%w: %s", ErrNoRing, stale)
	}
	journal, err := readLoadJournal(s.cfg.StagingDir)
	if err != nil {
		return OpStatus{}, err
	}
	resume := req.Resume
	if resume && len(req.Dirs) == 0 {
		if journal == nil {
			return OpStatus{}, badRequest{fmt.Errorf("load --resume: no interrupted load is journaled in %s", s.cfg.StagingDir)}
		}
		req = journal.Request
	}
	tables, err := collectLoad(snap, req)
	if err != nil {
		return OpStatus{}, err
	}
	req.Resume = false // the journal records the request itself
	var names []string
	for _, t := range tables {
		names = append(names, t.Keyspace+"."+t.Table)
	}
	return n.startOp(OpCassandraLoad, strings.Join(names, ","), func(ctx context.Context, o *op) error {
		return n.cassandraLoad(ctx, o, s, c, req, resume, tables)
	})
}

// loadJournalFor is the journal a load of req over tables (the sstables that passed
// verification) continues: the journaled one when it is of the same request over the same
// sstables, else a new one (with resume, none: an error).
func loadJournalFor(s *sidecar, req adminapi.CassandraLoadRequest, resume bool, tables []loadTable) (*loadJournal, error) {
	journal, err := readLoadJournal(s.cfg.StagingDir)
	if err != nil {
		return nil, err
	}
	sources, err := sourceFingerprint(tables)
	if err != nil {
		return nil, err
	}
	switch {
	case journal.sameLoad(req, sources):
		return journal, nil
	case resume:
		return nil, fmt.Errorf("load --resume: the load journaled in %s is of %s, or its sstables changed since", s.cfg.StagingDir,
			strings.Join(journal.Request.Dirs, " "))
	case journal != nil:
		s.log.Warn().Str("load", journal.ID).Strs("dirs", journal.Request.Dirs).Int("confirmed", len(journal.Done)).
			Msg("a new load replaces the journal of an unfinished one: what it did not send stays unsent")
	}
	id, err := randomID()
	if err != nil {
		return nil, err
	}
	return newLoadJournal(s.cfg.StagingDir, id, req, sources), nil
}

func (n *Node) cassandraLoad(ctx context.Context, o *op, s *sidecar, c *cluster, req adminapi.CassandraLoadRequest, resume bool, tables []loadTable) error {
	log := s.log.With().Str("op", OpCassandraLoad).Logger()
	// Every source sstable is verified here, before anything is staged or sent, so that a
	// damaged one is refused by its own path (a replica's verification would only name the
	// cut it received, and refuse the good sstables' cuts with it).
	phase := time.Now()
	tables, refused := verifyLoadSources(ctx, tables, n.cfg.Name, o)
	log.Info().Float64("seconds", time.Since(phase).Seconds()).Int("refused", len(refused)).Msg("load: source sstables verified")
	// The journal is matched on the sstables that passed: a load run again once a damaged
	// sstable is removed resumes; one with the sstable replaced is a new load.
	journal, err := loadJournalFor(s, req, resume, tables)
	if err != nil {
		return errors.Join(append(refused, err)...)
	}
	id := journal.ID
	log = log.With().Str("load", id).Logger()
	o.update(func(st *OpStatus) {
		st.Detail += " (load " + id
		if k := len(journal.Done); k > 0 {
			st.Detail += fmt.Sprintf(", resumed: %d transfer(s) confirmed earlier", k)
		}
		st.Detail += ")"
	})
	if err := journal.save(); err != nil {
		return fmt.Errorf("writing the load journal: %w", err)
	}
	// Each table's sstables are linked in the staging directory on their file system (the
	// first staging directory when none is: they are copied there).
	roots := map[string][]loadTable{}
	for _, t := range tables {
		root := filepath.Join(s.stagingOn(t.Dirs[0]), LoadStagingPrefix+id)
		roots[root] = append(roots[root], t)
	}
	for root := range roots {
		if err := os.RemoveAll(root); err != nil {
			return err
		}
	}
	defer func() {
		for root := range roots {
			if err := os.RemoveAll(root); err != nil {
				log.Warn().Err(err).Str("dir", root).Msg("removing the load's staged links")
			}
		}
	}()
	phase = time.Now()
	staged := map[[2]string]string{}
	for root, ts := range roots {
		st, err := stageLoad(root, ts)
		if err != nil {
			return fmt.Errorf("staging the load: %w", err)
		}
		maps.Copy(staged, st)
	}
	log.Info().Float64("seconds", time.Since(phase).Seconds()).Msg("load: source sstables staged")
	if err := n.catalog.AddSource(id, staged); err != nil {
		return err
	}
	defer n.catalog.RemoveSource(id)

	snap, stale, err := s.snapshot(ctx)
	if err != nil {
		return err
	}
	if stale != "" {
		return fmt.Errorf("%w: %s", ErrNoRing, stale)
	}
	var kss []string
	for _, t := range tables {
		if !slices.Contains(kss, t.Keyspace) {
			kss = append(kss, t.Keyspace)
		}
	}
	up, unavailable := upSidecars(snap, n.cfg.Name, c.g.Members())
	jobs, err := planCassandraLoad(snap, up, unavailable, n.cfg.Name, kss)
	if err != nil {
		return err
	}
	type task struct {
		job cassLoadJob
		t   loadTable
		key string
		idx int
	}
	var tasks []task
	resumed := 0
	for _, j := range jobs {
		for _, t := range tables {
			if t.Keyspace != j.Keyspace {
				continue
			}
			tk := task{job: j, t: t, key: loadTransferKey(t.Keyspace, t.Table, j.Replica, j.Ranges.String())}
			d, done := journal.done(tk.key)
			o.update(func(st *OpStatus) {
				tk.idx = len(st.Transfers)
				ts := TransferStatus{From: n.cfg.Name, To: j.name(), Keyspace: t.Keyspace, Table: t.Table, Ranges: j.Ranges.String(), State: OpRunning}
				if done {
					// Confirmed by an earlier run of this load: not sent again.
					ts.State, ts.Skipped = OpComplete, d.SSTables
				}
				st.Transfers = append(st.Transfers, ts)
			})
			if done {
				resumed++
				continue
			}
			tasks = append(tasks, tk)
		}
	}
	log.Info().Int("tables", len(tables)).Int("transfers", len(tasks)).Int("confirmed_earlier", resumed).Msg("loading into every replica")
	errs := eachTransfer(ctx, len(tasks), func(i int, err error) error {
		tk := tasks[i]
		var res CassandraLoadPeerResponse
		if err == nil {
			res, err = n.loadInto(ctx, c, tk.job, CassandraLoadPeerRequest{LoadID: id, Keyspace: tk.t.Keyspace, Table: tk.t.Table,
				TableID: tk.t.ID, Ranges: tk.job.Ranges.String()})
		}
		if err == nil {
			// The replica's answer lists what its node took, confirmed on disk: only now is
			// the transfer recorded as done. A journal that cannot be written costs a second
			// import of this cut on resume (identical cells: no row changes), not a loss.
			if jerr := journal.markDone(tk.key, loadDone{Replica: tk.job.name(), SSTables: len(res.Imported), Imported: res.Imported,
				At: time.Now().UTC()}); jerr != nil {
				log.Warn().Err(jerr).Str("transfer", tk.key).Msg("cannot record a confirmed transfer in the load journal")
			}
		}
		if err != nil {
			err = fmt.Errorf("%s.%s to %s %s: %w", tk.t.Keyspace, tk.t.Table, tk.job.describe(), tk.job.Ranges, err)
		}
		o.update(func(st *OpStatus) {
			ts := &st.Transfers[tk.idx]
			ts.SSTables, ts.BytesReceived, ts.State = res.SSTables, res.BytesReceived, OpComplete
			if err != nil {
				ts.State, ts.Error = OpFailed, err.Error()
			}
			if res.Recorded {
				// The replica had imported it for an earlier run of this load: nothing moved now.
				ts.SSTables, ts.BytesReceived, ts.Skipped = 0, 0, len(res.Imported)
				return
			}
			for _, p := range res.Imported {
				st.Imported = append(st.Imported, ImportedSSTable{Source: tk.t.Keyspace + "." + tk.t.Table, SSTable: tk.job.name() + ":" + p})
			}
		})
		return err
	})
	errs = append(errs, refused...)
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w; what was confirmed is journaled: run the same load again (or sluice cassandra load --resume) to send only the rest", err)
	}
	if err := journal.remove(); err != nil {
		log.Warn().Err(err).Msg("the load completed but its journal cannot be removed")
	}
	return nil
}

// name is the job's replica as the load's status names it: its sidecar, else its address,
// else its host id.
func (j cassLoadJob) name() string { return cmpOr(j.Sidecar, cmpOr(j.Address, j.Replica)) }

// describe names the job's replica in an error: its sidecar, address and host id.
func (j cassLoadJob) describe() string {
	return fmt.Sprintf("%s (Cassandra node %s, host id %s)", cmpOr(j.Sidecar, "no sidecar"), cmpOr(j.Address, "?"), j.Replica)
}

// loadInto has the job's replica fetch and import req: this sidecar itself, or another over
// the peer call.
func (n *Node) loadInto(ctx context.Context, c *cluster, j cassLoadJob, req CassandraLoadPeerRequest) (CassandraLoadPeerResponse, error) {
	if j.Sidecar == "" {
		return CassandraLoadPeerResponse{}, fmt.Errorf("not sent: %s", j.Why)
	}
	if j.Sidecar == n.cfg.Name {
		if n.stream == nil {
			return CassandraLoadPeerResponse{}, errors.New("node: no stream server")
		}
		self := gossip.Member{Name: n.cfg.Name, Meta: gossip.NodeMeta{StreamAddr: n.stream.Addr().String()}}
		return n.cassandraLoadFetch(ctx, self, req)
	}
	m, err := proven(c.members(), j.Sidecar)
	if err != nil {
		return CassandraLoadPeerResponse{}, err
	}
	var res CassandraLoadPeerResponse
	err = c.call(ctx, m, peerCassandraLoad, req, &res)
	return res, err
}

// peerCassandraLoad answers cassandra_load: the caller, a proven member, is the source.
func (n *Node) peerCassandraLoad(ctx context.Context, caller tlsx.PeerIdentity, req CassandraLoadPeerRequest) (CassandraLoadPeerResponse, error) {
	if n.sidecar == nil {
		return CassandraLoadPeerResponse{}, peerrpc.Errorf(peerrpc.CodeConflict, "%v", ErrNotSidecar)
	}
	c, err := n.requireCluster()
	if err != nil {
		return CassandraLoadPeerResponse{}, peerrpc.Errorf(peerrpc.CodeConflict, "%v", err)
	}
	src, err := proven(c.members(), caller.Name)
	if err != nil {
		return CassandraLoadPeerResponse{}, peerrpc.Errorf(peerrpc.CodeUnauthorized, "cassandra_load asked by %s: %v", caller.Name, err)
	}
	select {
	case n.peerFetches <- struct{}{}:
		defer func() { <-n.peerFetches }()
	case <-ctx.Done():
		return CassandraLoadPeerResponse{}, ctx.Err()
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(n.runCtx, cancel)()
	res, err := n.cassandraLoadFetch(ctx, src, req)
	var bad badRequest
	if errors.As(err, &bad) {
		return res, peerrpc.Errorf(peerrpc.CodeBadRequest, "%v", err)
	}
	return res, err
}

// cassandraLoadFetch fetches req from src's load source into this sidecar's staging
// directory and imports what arrived.
func (n *Node) cassandraLoadFetch(ctx context.Context, src gossip.Member, req CassandraLoadPeerRequest) (CassandraLoadPeerResponse, error) {
	s := n.sidecar
	if err := cqlname.CheckTable(req.Keyspace, req.Table); err != nil {
		return CassandraLoadPeerResponse{}, badRequest{err}
	}
	if req.LoadID == "" || strings.ContainsAny(req.LoadID, `/\.`) {
		return CassandraLoadPeerResponse{}, badRequest{fmt.Errorf("load id %q", req.LoadID)}
	}
	rs, err := token.ParseRanges(token.Murmur3, req.Ranges)
	if err != nil || len(rs) == 0 {
		return CassandraLoadPeerResponse{}, badRequest{fmt.Errorf("ranges %q: %v", req.Ranges, cmpOrErr(err))}
	}
	snap, _, err := s.snapshot(ctx)
	if err != nil {
		return CassandraLoadPeerResponse{}, err
	}
	tb, ok := snap.Table(req.Keyspace, req.Table)
	if !ok || tb.ID != req.TableID {
		return CassandraLoadPeerResponse{}, badRequest{fmt.Errorf("table %s.%s id %s: this node's schema has %q", req.Keyspace, req.Table, req.TableID, tb.ID)}
	}
	// A transfer this sidecar already imported (the loader asks again on resume) is answered
	// from the record; one importing now is waited for, then answered from the record.
	received := loadReceivedOf(s.cfg.StagingDir)
	key := receiptKey(req)
	rec, found, end, err := received.begin(key, ctx.Done())
	if err != nil {
		return CassandraLoadPeerResponse{}, err
	}
	if found {
		s.log.Info().Str("keyspace", tb.Keyspace).Str("table", tb.Name).Str("load", req.LoadID).Int("sstables", len(rec.Imported)).
			Msg("load transfer imported earlier (recorded): not fetched again")
		return CassandraLoadPeerResponse{SSTables: rec.SSTables, BytesReceived: rec.BytesReceived, Imported: rec.Imported, Recorded: true}, nil
	}
	defer end()
	id, err := randomID()
	if err != nil {
		return CassandraLoadPeerResponse{}, err
	}
	// Once fetched, a cut is imported to its end even if the loader goes away: an import cut
	// short leaves an outcome nobody can tell (nodetool's JMX call outlives nodetool). Only
	// the node stopping ends it. The Importer stages inside the transfer's own directory
	// (<staging>/loadin-<id>/ of each data directory's share), which start-up removes if the
	// sidecar dies meanwhile; an import of unknown outcome leaves it to start-up.
	life := n.runCtx
	if life == nil {
		life = context.Background()
	}
	rr, err := n.receive(ctx, snap, receiveSpec{src: src, source: req.LoadID, keyspace: tb.Keyspace, table: tb.Name, tableID: tb.ID, ranges: rs,
		base:        func(staging string) string { return filepath.Join(staging, LoadReceivedPrefix+id) },
		importCtx:   func() (context.Context, context.CancelFunc) { return context.WithTimeout(life, importTimeout) },
		stageInBase: true})
	fetchTime, verifyTime, importTime, confirmTime := rr.fetch, rr.verify, rr.handOver, rr.confirm
	out := CassandraLoadPeerResponse{SSTables: len(rr.fetched), BytesReceived: rr.bytes, Imported: []string{}}
	for _, t := range rr.imported {
		out.Imported = append(out.Imported, t.Live)
	}
	if err != nil {
		return out, err
	}
	if err := received.record(key, loadReceipt{SSTables: out.SSTables, BytesReceived: out.BytesReceived, Imported: out.Imported,
		At: time.Now().UTC()}); err != nil {
		s.log.Warn().Err(err).Str("load", req.LoadID).Msg("cannot record an imported load transfer: a resume would import it again")
	}
	s.log.Info().Str("keyspace", tb.Keyspace).Str("table", tb.Name).Str("from", src.Name).Int("sstables", len(out.Imported)).
		Int64("bytes", out.BytesReceived).Float64("fetch_seconds", fetchTime.Seconds()).Float64("verify_seconds", verifyTime.Seconds()).
		Float64("import_seconds", importTime.Seconds()).Float64("stage_confirm_seconds", confirmTime.Seconds()).Msg("loaded: fetched and imported")
	return out, nil
}

func cmpOrErr(err error) error {
	if err != nil {
		return err
	}
	return errors.New("empty")
}
