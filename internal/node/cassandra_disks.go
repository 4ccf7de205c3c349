package node

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/sluicedb/sluice/internal/cassandra"
	"github.com/sluicedb/sluice/internal/lib/fsx"
	"github.com/sluicedb/sluice/membership/gossip"
	"github.com/sluicedb/sluice/membership/ring"
	"github.com/sluicedb/sluice/sstable/descriptor"
	"github.com/sluicedb/sluice/sstable/token"
	"github.com/sluicedb/sluice/stream"
)

// A sidecar of a Cassandra node with several data directories (JBOD) receives every range
// into the staging directory on the file system of the data directory Cassandra will put it
// in: the ranges of a transfer are cut at the keyspace's disk boundaries (computed from the
// ring read as Cassandra's DiskBoundaryManager does; internal/cassandra/disks.go), each
// data directory's share is fetched into a directory of its own in that data directory's
// staging directory (the stream receiver checks that file system's free space before a byte
// flows), and imported from there: Cassandra's importer places each sstable by its first
// token, which is in that share, so the import is a rename. A share whose data directory has
// no staging directory on its file system is refused, naming the directory, before anything
// is fetched. With one data directory there is one share, as before.

// stagingPairs is the staging directory of each data directory ("" for none on its file
// system), read now.
func (s *sidecar) stagingPairs() []string {
	pairs, _ := cassandra.PairStaging(s.dirs, s.cfg.StagingDirs)
	return pairs
}

// stagingOn is the staging directory on dir's file system, else the first.
func (s *sidecar) stagingOn(dir string) string {
	if len(s.cfg.StagingDirs) > 1 {
		if di, err := os.Stat(dir); err == nil {
			for _, st := range s.cfg.StagingDirs {
				if fi, err := os.Stat(st); err == nil && cassandra.SameFileSystem(fi, di) {
					return st
				}
			}
		}
	}
	return s.cfg.StagingDir
}

// diskBoundaries are the disk boundaries of keyspace on the local node of snap: the ranges
// the node replicates (each vnode's own, as DiskBoundaryManager takes them) split among the
// data directories; vnodes is the node's token count above one (Cassandra reads num_tokens).
func (s *sidecar) diskBoundaries(snap cassandra.Snapshot, keyspace string) ([]int64, error) {
	if len(s.dirs) < 2 {
		return []int64{maxToken}, nil
	}
	local, ok := snap.LocalNode()
	if !ok {
		return nil, errors.New("the ring read has no local node")
	}
	r, _, err := snap.Ring()
	if err != nil {
		return nil, err
	}
	st, err := snap.Strategy(keyspace)
	if err != nil {
		return nil, err
	}
	var rs token.RangeSet
	for _, rr := range ring.RangeOwners(r, st) {
		for _, n := range rr.Replicas {
			if n.Name == local.HostID {
				rs = append(rs, rr.Range)
				break
			}
		}
	}
	return cassandra.DiskBoundaries(rs, len(s.dirs), len(local.Tokens) > 1), nil
}

const maxToken = int64(^uint64(0) >> 1)

// diskShare is the part of a transfer's ranges one data directory holds.
type diskShare struct {
	disk             int
	dataDir, staging string
	ranges           token.RangeSet
}

// shares cuts rs by keyspace's disk boundaries: one share per data directory with tokens of
// rs. A share whose data directory has no staging directory on its file system is an error
// naming it.
func (s *sidecar) shares(snap cassandra.Snapshot, keyspace string, rs token.RangeSet) ([]diskShare, []int64, error) {
	b, err := s.diskBoundaries(snap, keyspace)
	if err != nil {
		return nil, nil, err
	}
	pairs := s.stagingPairs()
	var out []diskShare
	for i, part := range cassandra.SplitByDisk(rs, b) {
		if len(part) == 0 {
			continue
		}
		if i >= len(s.dirs) {
			return nil, nil, fmt.Errorf("disk boundaries %v name more data directories than the %d configured", b, len(s.dirs))
		}
		if pairs[i] == "" {
			return nil, nil, fmt.Errorf("%w: ranges %v belong in data file directory %s, and no staging directory (%v) is on its file system: nothing fetched (cassandra.staging_dirs)",
				cassandra.ErrCrossDevice, part, s.dirs[i], s.cfg.StagingDirs)
		}
		out = append(out, diskShare{disk: i, dataDir: s.dirs[i], staging: pairs[i], ranges: part})
	}
	return out, b, nil
}

// importer hands sstables of keyspace to the local node of snap: each staged beside the data
// directory its first token falls to.
func (s *sidecar) importer(snap cassandra.Snapshot, keyspace string) *cassandra.Importer {
	name := s.cfg.NativeAddress
	if l, ok := snap.LocalNode(); ok {
		name = l.HostID
	}
	im := &cassandra.Importer{Node: name, Nodetool: s.cfg.Nodetool, StagingDir: s.cfg.StagingDir, DataDirs: s.dirs, Run: s.runNodetool, JMX: s.jmx}
	if len(s.dirs) > 1 {
		im.Staging = s.stagingPairs()
		if b, err := s.diskBoundaries(snap, keyspace); err == nil {
			im.Boundaries = b
		} else {
			s.log.Warn().Err(err).Str("keyspace", keyspace).Msg("no disk boundaries: imports are staged without placement")
		}
	}
	return im
}

// receiveSpec is one transfer received into the staging directories and imported.
type receiveSpec struct {
	src      gossip.Member
	source   string // a load's source id, or "" for the live table
	keyspace string
	table    string
	tableID  string
	ranges   token.RangeSet
	// base is the directory a share is received into, in its staging directory (removed
	// after, unless the import's outcome is unknown); start-up removes what a crash leaves.
	base func(staging string) string
	// importCtx bounds an import; lock, when set, serialises the imports of the table.
	importCtx func() (context.Context, context.CancelFunc)
	lock      sync.Locker
	// stageInBase has the Importer stage inside base (so that start-up removes an import of
	// unknown outcome with it: a load's, whose data is still at the loader); else in the
	// staging directory itself, where an import of unknown outcome is left for the operator.
	stageInBase bool
}

// receiveResult is what a transfer's shares fetched and imported.
type receiveResult struct {
	fetched  []stream.Fetched
	bytes    int64
	imported []cassandra.ImportedSSTable
	// the phases, summed over the shares: fetch, strict verification, Cassandra's importer,
	// the rest of the import (staging, confirmation)
	fetch, verify, handOver, confirm time.Duration
	// kept names share directories kept because an import's outcome is unknown
	kept []string
}

// receive fetches each disk share of sp into its staging directory and imports it. It stops
// at the first failure; what earlier shares imported is in the result.
func (n *Node) receive(ctx context.Context, snap cassandra.Snapshot, sp receiveSpec) (receiveResult, error) {
	s := n.sidecar
	var out receiveResult
	shares, bounds, err := s.shares(snap, sp.keyspace, sp.ranges)
	if err != nil {
		return out, err
	}
	parents := map[string]bool{}
	defer func() {
		for p := range parents {
			os.Remove(p) // only once empty: a share kept for an unknown outcome stays
		}
	}()
	for _, sh := range shares {
		base := sp.base(sh.staging)
		if len(shares) > 1 {
			// Data directories on one file system share a staging directory: a directory of
			// each share's own.
			parents[base] = true
			base = filepath.Join(base, fmt.Sprint(sh.disk))
		}
		dir := filepath.Join(base, sp.keyspace, sp.table+"-"+sp.tableID)
		start := time.Now()
		res, err := n.fetchFrom(ctx, sp.src, sp.source, sp.keyspace, sp.table, sh.ranges, dir)
		out.fetch += time.Since(start)
		if res != nil {
			out.fetched = append(out.fetched, res.SSTables...)
			out.bytes += res.BytesReceived
		}
		if err != nil {
			os.RemoveAll(base)
			return out, fmt.Errorf("fetch%s: %w", sh.describe(len(s.dirs)), noSpaceNote(err, sh))
		}
		if len(res.SSTables) == 0 {
			os.RemoveAll(base)
			continue
		}
		ir, kept, err := n.importShare(sp, snap, sh, bounds, base, dir, strictlyVerified(res.SSTables))
		out.verify += ir.Verified
		out.handOver += ir.HandedOver
		out.confirm += max(ir.Elapsed-ir.Verified-ir.HandedOver, 0)
		out.imported = append(out.imported, ir.SSTables...)
		if kept {
			out.kept = append(out.kept, base)
		} else {
			os.RemoveAll(base)
		}
		if err != nil {
			return out, fmt.Errorf("import%s: %w", sh.describe(len(s.dirs)), err)
		}
	}
	return out, nil
}

// importShare imports what one share fetched into dir. kept reports an outcome unknown: base
// must stay.
func (n *Node) importShare(sp receiveSpec, snap cassandra.Snapshot, sh diskShare, bounds []int64, base, dir string, verified map[string]os.FileInfo) (cassandra.ImportResult, bool, error) {
	s := n.sidecar
	if sp.lock != nil {
		sp.lock.Lock()
		defer sp.lock.Unlock()
	}
	ictx, cancel := sp.importCtx()
	defer cancel()
	im := s.importer(snap, sp.keyspace)
	im.Verify = skipVerified(verified)
	if len(s.dirs) > 1 {
		im.Boundaries = bounds
	}
	if sp.stageInBase {
		im.StagingDir = base
		if len(s.dirs) > 1 {
			im.Staging[sh.disk] = base
		}
	}
	ir, err := im.Import(ictx, cassandra.ImportRequest{Keyspace: sp.keyspace, Table: sp.table, TableID: sp.tableID, Dir: dir})
	return ir, err != nil && ictx.Err() != nil, err
}

// strictlyVerified is the Data.db files of the fetched sstables the receiver verified strictly
// (stream.Fetched.StrictVerified), each as it was then.
func strictlyVerified(fs []stream.Fetched) map[string]os.FileInfo {
	out := map[string]os.FileInfo{}
	for _, f := range fs {
		if !f.StrictVerified {
			continue
		}
		p := f.Path + "-" + string(descriptor.Data)
		if fi, err := os.Stat(p); err == nil {
			out[p] = fi
		}
	}
	return out
}

// skipVerified is the import's verification: cassandra.VerifyStrict, except for the sstables
// the receiver already verified strictly before publishing them in sluice's private staging
// directory (the same checks on the same bytes: chunk CRCs, digest, every partition read in
// index order, Cassandra's sequential rules, the ranges asked for), as long as their Data.db
// is still the same file of the same size and time.
func skipVerified(verified map[string]os.FileInfo) func(string) error {
	return func(dataPath string) error {
		if was, ok := verified[dataPath]; ok {
			if now, err := os.Stat(dataPath); err == nil && os.SameFile(was, now) && now.Size() == was.Size() && now.ModTime().Equal(was.ModTime()) {
				return nil
			}
		}
		return cassandra.VerifyStrict(dataPath)
	}
}

// describe names the share's data directory in an error when there are several.
func (sh diskShare) describe(dirs int) string {
	if dirs < 2 {
		return ""
	}
	return fmt.Sprintf(" (ranges %v of data file directory %s, staged in %s)", sh.ranges, sh.dataDir, sh.staging)
}

// noSpaceNote says which data directory's disk is full when err is a lack of space.
func noSpaceNote(err error, sh diskShare) error {
	var nse *fsx.NoSpaceError
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, fsx.ErrNoSpace) || errors.As(err, &nse) {
		return fmt.Errorf("the file system of staging directory %s (data file directory %s) is full: %w", sh.staging, sh.dataDir, err)
	}
	return err
}
