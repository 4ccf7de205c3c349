package ops

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"sort"
	"strings"
	"sync"

	"github.com/sluicedb/sluice/internal/lib/fsx"
)

// JournalFile is the journal's name in a node's first data directory.
const JournalFile = ".sluice-op-journal.json"

// opJournal remembers durably which ranges of which tables each receiver of an operation
// installed, so that an operation retried after a failure or resumed after a restart does not
// fetch them again: a fetch that completed removed its own resume record, and fetching it
// again would install the same partitions twice. What was installed, not where from, is what
// counts: a retry whose plan takes a range from another source (one was down) still skips it.
// It is keyed by the operation and the fingerprint of what its plan delivers; a different plan
// (the ring changed) starts afresh. Without a path it remembers only in memory. It is safe
// for concurrent use.
type opJournal struct {
	mu   sync.Mutex
	path string
	Op   string   `json:"op"`
	Done []string `json:"done"`
	done map[string]bool
}

// planKey fingerprints an operation: its kind and what every transfer of its plan delivers
// (keyspace, receiver, range), whichever source it comes from.
func planKey(kind string, plans []Plan) string {
	var parts []string
	for _, p := range plans {
		for _, t := range p.Transfers {
			parts = append(parts, p.Keyspace+"|"+t.To+"|"+t.Range.String())
		}
	}
	sort.Strings(parts)
	sum := sha256.Sum256([]byte(strings.Join(parts, "\n")))
	return kind + ":" + hex.EncodeToString(sum[:12])
}

// openJournal loads the journal at path for op, or starts an empty one when it records
// another.
func openJournal(path, op string) (*opJournal, error) {
	j := &opJournal{path: path, done: map[string]bool{}}
	if path != "" {
		b, err := os.ReadFile(j.path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return nil, err
		default:
			var old opJournal
			if json.Unmarshal(b, &old) == nil && old.Op == op {
				j.Done = old.Done
			}
		}
	}
	j.Op = op
	for _, k := range j.Done {
		j.done[k] = true
	}
	return j, nil
}

func (j *opJournal) has(key string) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.done[key]
}

// add records completed transfers before the operation goes on (temp file, fsync, rename,
// directory fsync).
func (j *opJournal) add(keys ...string) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	fresh := false
	for _, key := range keys {
		if !j.done[key] {
			j.done[key] = true
			j.Done = append(j.Done, key)
			fresh = true
		}
	}
	if !fresh || j.path == "" {
		return nil
	}
	b, err := json.Marshal(j)
	if err != nil {
		return err
	}
	return fsx.WriteFileAtomic(j.path, b, 0o644)
}

// clear forgets the operation once it has completed.
func (j *opJournal) clear() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.path == "" {
		return nil
	}
	if err := os.Remove(j.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}
