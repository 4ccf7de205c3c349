package stream

import (
	"time"

	"github.com/sluicedb/sluice/sstable/descriptor"
)

// Direction says which way a session moves data, seen from this node.
type Direction string

const (
	Sending   Direction = "sending"
	Receiving Direction = "receiving"
)

// SessionStatus is a snapshot of one session for netstats: like nodetool netstats, each
// session with its peer, direction, files and bytes done out of total, the current rate and
// the state.
type SessionStatus struct {
	ID         string    `json:"id"`
	Peer       string    `json:"peer"`
	Direction  Direction `json:"direction"`
	Keyspace   string    `json:"keyspace"`
	Table      string    `json:"table"`
	Operation  string    `json:"operation"`
	State      string    `json:"state"` // preparing, streaming, complete, failed
	Error      string    `json:"error,omitempty"`
	FilesDone  int       `json:"files_done"`
	FilesTotal int       `json:"files_total"`
	BytesDone  int64     `json:"bytes_done"`
	BytesTotal int64     `json:"bytes_total"`
	// RateBytes is the recent throughput in bytes per second.
	RateBytes float64   `json:"rate_bytes_per_second"`
	Started   time.Time `json:"started"`
	Updated   time.Time `json:"updated"`
}

// Catalog is what a sender serves: the live sstables of a table, held so that a concurrent
// deletion (compaction, cleanup) cannot break a transfer. The node implements it over its data
// directories.
type Catalog interface {
	// Hold returns the live sstables of keyspace.table and a release function; until release
	// is called the files stay readable (a hard-link snapshot or a reference count).
	Hold(keyspace, table string) (sstables []descriptor.Descriptor, release func(), err error)
}

// SourceCatalog is a Catalog that also serves sstables registered under a source id (a
// sidecar's load), which a request names in wire.StreamRequest.Source. A server whose Catalog
// is not one refuses such requests.
type SourceCatalog interface {
	HoldSource(source, keyspace, table string) (sstables []descriptor.Descriptor, release func(), err error)
}
