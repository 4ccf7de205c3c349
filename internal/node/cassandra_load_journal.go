package node

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sluicedb/sluice/internal/adminapi"
	"github.com/sluicedb/sluice/internal/catalog"
	"github.com/sluicedb/sluice/internal/lib/fsx"
	"github.com/sluicedb/sluice/sstable/descriptor"
)

// A load's durable state, in the staging directory (the data directories' file system, never
// a live table directory). Two small files, neither matching a staging prefix start-up removes:
//
//   - the loading sidecar's journal (loadJournalFile): the request, a fingerprint of its source
//     sstables, the load id, and every (table, replica, ranges) transfer whose import the
//     replica's sidecar confirmed. A load that did not complete keeps it; the same request
//     again (the same DIRs, or `sluice cassandra load --resume`) reuses the load id and sends
//     only the transfers not recorded. A transfer is recorded only from a replica's answer that
//     lists what its node took, confirmed on disk: never from a call that failed or whose end
//     was not seen.
//   - each replica's sidecar's record of the load transfers it imported (loadReceivedFile),
//     by load id, table and ranges: a loading sidecar that died after its replica confirmed
//     an import, but before it wrote that down, asks again on resume and gets the recorded
//     answer instead of a second import of the same cut.
//
// A second import of the same cut would not change a row (Cassandra reconciles identical
// cells: same value, same timestamp), only cost the disk of a copy until compaction merges
// it; the two records keep a resume from doing it in every case that leaves a trace on disk.
const (
	loadJournalFile  = "sluice-load-journal.json"
	loadReceivedFile = "sluice-load-received.json"
)

// loadReceivedTTL bounds how long a replica remembers a load's imports: a resume comes
// within it or starts over (the loading sidecar's journal is the authority; this record only
// spares a second import).
const loadReceivedTTL = 7 * 24 * time.Hour

// loadJournal is the loading sidecar's journal of one load. Its methods are safe for
// concurrent use.
type loadJournal struct {
	mu   sync.Mutex
	path string

	ID      string                        `json:"id"`
	Request adminapi.CassandraLoadRequest `json:"request"`
	Sources string                        `json:"sources"` // sourceFingerprint of the tables
	Started time.Time                     `json:"started"`
	Done    map[string]loadDone           `json:"done"` // by loadTransferKey
}

// loadDone is one transfer a replica's sidecar confirmed.
type loadDone struct {
	Replica  string    `json:"replica"` // sidecar name, else host id
	SSTables int       `json:"sstables"`
	Imported []string  `json:"imported"` // Data.db paths in the replica's live table directory
	At       time.Time `json:"at"`
}

// loadTransferKey names one transfer of a load: the table, the replica's host id, its ranges.
func loadTransferKey(keyspace, table, replica, ranges string) string {
	return keyspace + "." + table + "|" + replica + "|" + ranges
}

// readLoadJournal reads the journal in staging; nil when there is none. A journal that cannot
// be parsed is an error naming the file (it is the record of what a load confirmed).
func readLoadJournal(staging string) (*loadJournal, error) {
	p := filepath.Join(staging, loadJournalFile)
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	j := &loadJournal{path: p}
	if err := json.Unmarshal(b, j); err != nil {
		return nil, fmt.Errorf("load journal %s: %w (remove it to start loads afresh)", p, err)
	}
	if j.Done == nil {
		j.Done = map[string]loadDone{}
	}
	return j, nil
}

// newLoadJournal starts the journal of a new load (written by save).
func newLoadJournal(staging, id string, req adminapi.CassandraLoadRequest, sources string) *loadJournal {
	return &loadJournal{path: filepath.Join(staging, loadJournalFile), ID: id, Request: req, Sources: sources,
		Started: time.Now().UTC(), Done: map[string]loadDone{}}
}

// sameLoad reports whether j is the journal of req over the same source sstables.
func (j *loadJournal) sameLoad(req adminapi.CassandraLoadRequest, sources string) bool {
	return j != nil && j.Sources == sources && slices.Equal(j.Request.Dirs, req.Dirs) &&
		j.Request.Keyspace == req.Keyspace && j.Request.Table == req.Table
}

// done returns the recorded transfer of key.
func (j *loadJournal) done(key string) (loadDone, bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	d, ok := j.Done[key]
	return d, ok
}

// markDone records a confirmed transfer and writes the journal durably.
func (j *loadJournal) markDone(key string, d loadDone) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.Done[key] = d
	return j.saveLocked()
}

// save writes the journal durably (atomically: a crash leaves the old one or the new one).
func (j *loadJournal) save() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.saveLocked()
}

func (j *loadJournal) saveLocked() error {
	b, err := json.MarshalIndent(j, "", " ")
	if err != nil {
		return err
	}
	return fsx.WriteFileAtomic(j.path, b, 0o644)
}

// remove deletes the journal of a load that completed.
func (j *loadJournal) remove() error {
	err := os.Remove(j.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err == nil {
		err = fsx.SyncDir(filepath.Dir(j.path))
	}
	return err
}

// sourceFingerprint fingerprints a load's source sstables (those not in Skip): every
// component's path, size and modification time. A journal of other sources is not resumed.
func sourceFingerprint(tables []loadTable) (string, error) {
	h := sha256.New()
	for _, t := range tables {
		fmt.Fprintf(h, "table %s.%s %s\n", t.Keyspace, t.Table, t.ID)
		for _, dir := range t.Dirs {
			live, err := catalog.ListLive(dir)
			if err != nil {
				return "", err
			}
			for _, s := range live {
				if t.Skip[s.Desc.Path(descriptor.Data)] {
					continue
				}
				for _, c := range s.Comps {
					p := s.Desc.Path(c)
					fi, err := os.Stat(p)
					if err != nil {
						return "", err
					}
					fmt.Fprintf(h, "%s %d %d\n", p, fi.Size(), fi.ModTime().UnixNano())
				}
			}
		}
	}
	return hex.EncodeToString(h.Sum(nil)[:16]), nil
}

// loadReceived is a replica sidecar's record of the load transfers it imported, and of those
// importing now (a second ask for one waits for it). Safe for concurrent use.
type loadReceived struct {
	mu       sync.Mutex
	path     string
	inflight map[string]chan struct{}
}

// loadReceipt is one recorded import.
type loadReceipt struct {
	SSTables      int       `json:"sstables"`
	BytesReceived int64     `json:"bytes_received"`
	Imported      []string  `json:"imported"`
	At            time.Time `json:"at"`
}

func newLoadReceived(staging string) *loadReceived {
	return &loadReceived{path: filepath.Join(staging, loadReceivedFile), inflight: map[string]chan struct{}{}}
}

// receiptKey names one load transfer on the receiving side.
func receiptKey(req CassandraLoadPeerRequest) string {
	return strings.Join([]string{req.LoadID, req.Keyspace, req.Table, req.TableID, req.Ranges}, "|")
}

// begin returns the recorded import of key, if any (after waiting for one in flight); else
// it marks key in flight and returns end, to call once the attempt is over.
func (r *loadReceived) begin(key string, wait <-chan struct{}) (rec loadReceipt, found bool, end func(), err error) {
	for {
		r.mu.Lock()
		ch, busy := r.inflight[key]
		if !busy {
			all, rerr := r.readLocked()
			if rerr != nil {
				r.mu.Unlock()
				return loadReceipt{}, false, nil, rerr
			}
			if rec, ok := all[key]; ok {
				r.mu.Unlock()
				return rec, true, nil, nil
			}
			done := make(chan struct{})
			r.inflight[key] = done
			r.mu.Unlock()
			return loadReceipt{}, false, func() {
				r.mu.Lock()
				delete(r.inflight, key)
				r.mu.Unlock()
				close(done)
			}, nil
		}
		r.mu.Unlock()
		select {
		case <-ch:
		case <-wait:
			return loadReceipt{}, false, nil, errors.New("cancelled while the same load transfer was importing")
		}
	}
}

// record writes a confirmed import durably, dropping records older than loadReceivedTTL.
func (r *loadReceived) record(key string, rec loadReceipt) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	all, err := r.readLocked()
	if err != nil {
		return err
	}
	for k, v := range all {
		if time.Since(v.At) > loadReceivedTTL {
			delete(all, k)
		}
	}
	all[key] = rec
	b, err := json.MarshalIndent(all, "", " ")
	if err != nil {
		return err
	}
	return fsx.WriteFileAtomic(r.path, b, 0o644)
}

func (r *loadReceived) readLocked() (map[string]loadReceipt, error) {
	all := map[string]loadReceipt{}
	b, err := os.ReadFile(r.path)
	if errors.Is(err, fs.ErrNotExist) {
		return all, nil
	}
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, &all); err != nil {
		return nil, fmt.Errorf("%s: %w", r.path, err)
	}
	return all, nil
}

// loadReceivedBy holds one loadReceived per staging directory: the record is the staging
// directory's, and the in-flight marks must be shared by every call into it.
var loadReceivedBy = struct {
	sync.Mutex
	m map[string]*loadReceived
}{m: map[string]*loadReceived{}}

func loadReceivedOf(staging string) *loadReceived {
	loadReceivedBy.Lock()
	defer loadReceivedBy.Unlock()
	r := loadReceivedBy.m[staging]
	if r == nil {
		r = newLoadReceived(staging)
		loadReceivedBy.m[staging] = r
	}
	return r
}
