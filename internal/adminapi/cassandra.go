package adminapi

import (
	"context"
	"errors"
	"net/http"
	"time"
)

// CassandraBackend is what a node that is the sidecar of a live Cassandra node (the
// cassandra: section) adds to Backend. A Backend without it answers the /v1/cassandra routes
// with 409; so does one whose node has no cassandra section.
type CassandraBackend interface {
	// CassandraRing is the ring as the local Cassandra node describes it.
	CassandraRing(ctx context.Context) (CassandraRing, error)
	// CassandraImport verifies the sstables of a directory and imports them into the live
	// node with nodetool import, returning once the node is seen to hold them.
	CassandraImport(ctx context.Context, req CassandraImportRequest) (CassandraImportResult, error)
	// StartCassandraRebuild starts OpCassandraRebuild: every range the live node replicates,
	// fetched from other replicas' sidecars and imported with nodetool import.
	StartCassandraRebuild(req CassandraRebuildRequest) (OpStatus, error)
	// StartCassandraLoad starts OpCassandraLoad: sstables of directories on the sidecar's
	// host, sent to every replica's sidecar, which imports them.
	StartCassandraLoad(req CassandraLoadRequest) (OpStatus, error)
	// StartCassandraReplace starts OpCassandraReplace: every range a dead Cassandra node
	// replicated, fetched from other replicas' sidecars into a directory for its replacement.
	StartCassandraReplace(req CassandraReplaceRequest) (OpStatus, error)
}

// OpCassandraReplace is the kind of a sidecar's replace in OpStatus.Kind.
const OpCassandraReplace = "cassandra-replace"

// CassandraReplaceRequest is the body of POST /v1/cassandra/replace: fill Into (an absolute
// path on the sidecar's host: the data directory of a replacement Cassandra node that has not
// started yet) with every range the dead node Dead (its address or host id, DOWN in the ring)
// replicated, from the other replicas' sidecars, in Cassandra's layout
// Into/<keyspace>/<table>-<id>/. Native, when set, is host:port of a live Cassandra node's CQL
// port to read the ring from (the sidecar's own node's when empty: a replacement's sidecar
// has no live node of its own yet). Keyspace limits it to one keyspace.
type CassandraReplaceRequest struct {
	Dead     string `json:"dead"`
	Into     string `json:"into"`
	Native   string `json:"native,omitempty"`
	Keyspace string `json:"keyspace,omitempty"`
}

// OpCassandraLoad is the kind of a sidecar's load in OpStatus.Kind.
const OpCassandraLoad = "cassandra-load"

// CassandraLoadRequest is the body of POST /v1/cassandra/load: the complete sstables of Dirs
// (absolute paths on the sidecar's host; each a <keyspace>/<table>[-<id>] directory, a tree
// of them, or, with Keyspace and Table, a directory of that table's sstables) sent to the
// replicas of their ranges. The directories are left as they were.
//
// A load that did not complete leaves a journal of the transfers its replicas confirmed; the
// same request again resumes it (the same load id, only the transfers not confirmed are
// sent). Resume without Dirs resumes the journaled load; with Dirs, it must be the same.
type CassandraLoadRequest struct {
	Dirs     []string `json:"dirs"`
	Keyspace string   `json:"keyspace,omitempty"`
	Table    string   `json:"table,omitempty"`
	Resume   bool     `json:"resume,omitempty"`
}

// LoadRefused is the To of a load's transfer entry for a source sstable refused before
// anything was sent (its From is the sstable's Data.db path, its Error what was wrong).
const LoadRefused = "(refused)"

// OpCassandraRebuild is the kind of a sidecar's rebuild in OpStatus.Kind.
const OpCassandraRebuild = "cassandra-rebuild"

// CassandraRebuildRequest is the body of POST /v1/cassandra/rebuild (may be {}): SourceDC
// limits the sources to one DC (nodetool rebuild -- DC), Keyspace the rebuild to one keyspace.
type CassandraRebuildRequest struct {
	SourceDC string `json:"source_dc,omitempty"`
	Keyspace string `json:"keyspace,omitempty"`
}

// CassandraRebuildTable is one table's share of one source in CassandraRebuildResult.
type CassandraRebuildTable struct {
	Keyspace      string `json:"keyspace"`
	Table         string `json:"table"`
	From          string `json:"from"`             // the source's sidecar
	To            string `json:"to"`               // the receiving sidecar
	Ranges        string `json:"ranges,omitempty"` // for a failure
	SSTables      int    `json:"sstables"`
	BytesReceived int64  `json:"bytes_received"`
	Error         string `json:"error,omitempty"`
}

// CassandraRebuildResult is what sluice cassandra rebuild and load print with --json: a
// summary of the operation's final OpStatus (Op).
type CassandraRebuildResult struct {
	State string `json:"state"`
	Error string `json:"error,omitempty"`
	// Ranges counts the (keyspace, range) pairs fetched, SSTables the sstables received and
	// imported, over every table.
	Ranges        int                     `json:"ranges"`
	SSTables      int                     `json:"sstables"`
	BytesReceived int64                   `json:"bytes_received"`
	WallSeconds   float64                 `json:"wall_seconds"`
	Imported      []CassandraRebuildTable `json:"imported"`
	Failed        []CassandraRebuildTable `json:"failed"`
	Op            OpStatus                `json:"op"`
}

// CassandraLoadResult is what `sluice cassandra load --json` prints: a rebuild's summary (its
// bytes_received are what the replicas received) with the bytes this sidecar's source sent
// (bytes_sent, the same bytes seen from here) and the sstables each replica's node imported
// (imported_per_node, by sidecar name).
//
// Resumed counts the transfers an earlier run of the same load had confirmed (not sent
// again); Refused lists the source sstables refused by name before anything was sent.
type CassandraLoadResult struct {
	CassandraRebuildResult
	BytesSent       int64                  `json:"bytes_sent"`
	ImportedPerNode map[string]int         `json:"imported_per_node"`
	Resumed         int                    `json:"resumed"`
	Refused         []CassandraLoadRefusal `json:"refused"`
}

// CassandraLoadRefusal is one source sstable a load refused.
type CassandraLoadRefusal struct {
	Keyspace string `json:"keyspace"`
	Table    string `json:"table"`
	SSTable  string `json:"sstable"` // its Data.db path
	Error    string `json:"error"`
}

// Sidecar states of a Cassandra node in CassandraNode.Sidecar.
const (
	SidecarUp      = "up"      // this node's, or a proven, alive gossip member's
	SidecarDown    = "down"    // a gossip member matched to the node is dead or unproven
	SidecarMissing = "missing" // gossip runs and no member matches the node
	SidecarUnknown = "unknown" // this sidecar runs without gossip: it cannot tell
)

// CassandraNode is one Cassandra node of GET /v1/cassandra/ring.
type CassandraNode struct {
	HostID string `json:"host_id"`
	// Address is the node's broadcast address (system.local.broadcast_address,
	// system.peers_v2.peer); ListenAddress is known for the local node only.
	Address        string  `json:"address"`
	ListenAddress  string  `json:"listen_address,omitempty"`
	NativeAddress  string  `json:"native_address"`
	NativePort     int     `json:"native_port,omitempty"`
	DC             string  `json:"dc"`
	Rack           string  `json:"rack"`
	State          string  `json:"state"` // UP, DOWN or UNKNOWN
	Local          bool    `json:"local"` // the node this sidecar sits beside
	TokenCount     int     `json:"token_count"`
	Tokens         []int64 `json:"tokens"` // Murmur3, ascending
	ReleaseVersion string  `json:"release_version,omitempty"`
	// Sidecar is SidecarUp, SidecarDown, SidecarMissing or SidecarUnknown; SidecarName is the
	// matched sluice node's name.
	Sidecar     string `json:"sidecar"`
	SidecarName string `json:"sidecar_name,omitempty"`
}

// CassandraKeyspace is one keyspace's replication.
type CassandraKeyspace struct {
	Name        string            `json:"name"`
	Replication map[string]string `json:"replication"` // as system_schema.keyspaces stores it
	// Strategy is sluice's reading of it (SimpleStrategy{RF:3}, NetworkTopologyStrategy{...}),
	// or "" with Unsupported saying why sluice's ring cannot place its replicas
	// (LocalStrategy, EverywhereStrategy, transient replicas).
	Strategy    string `json:"strategy,omitempty"`
	Unsupported string `json:"unsupported,omitempty"`
	Tables      int    `json:"tables"`
}

// CassandraRing is GET /v1/cassandra/ring.
type CassandraRing struct {
	Cluster     string    `json:"cluster"`
	Partitioner string    `json:"partitioner"`
	Local       string    `json:"local"` // host id of the node this sidecar sits beside
	ReadAt      time.Time `json:"read_at"`
	// Stale is why this is not a fresh read (Cassandra unreachable now): the last good one.
	Stale     string              `json:"stale,omitempty"`
	Nodes     []CassandraNode     `json:"nodes"`
	Keyspaces []CassandraKeyspace `json:"keyspaces"`
	// SidecarMatch says how other sidecars were matched to Cassandra nodes.
	SidecarMatch string `json:"sidecar_match"`
}

// CassandraImportRequest is the body of POST /v1/cassandra/import: the complete sstables of
// Dir (an absolute path on the sidecar's host) into Keyspace.Table of the live node. Dir's
// sstables are moved out of it (copied when it is on another file system than the staging
// directory); a failed import puts them back.
type CassandraImportRequest struct {
	Keyspace string `json:"keyspace"`
	Table    string `json:"table"`
	Dir      string `json:"dir"`
}

// CassandraImportedSSTable is one sstable the live node took.
type CassandraImportedSSTable struct {
	Source string `json:"source"` // in the request's directory
	Live   string `json:"live"`   // its Data.db in the live table directory
	Bytes  int64  `json:"bytes"`
	Copied bool   `json:"copied,omitempty"`
}

// CassandraImportResult is the answer of POST /v1/cassandra/import: every sstable listed is
// in a live table directory of the node.
type CassandraImportResult struct {
	Node           string                     `json:"node"` // the Cassandra node's host id
	Keyspace       string                     `json:"keyspace"`
	Table          string                     `json:"table"`
	TableID        string                     `json:"table_id"`
	SSTables       []CassandraImportedSSTable `json:"sstables"`
	Nodetool       string                     `json:"nodetool_output,omitempty"`
	ElapsedSeconds float64                    `json:"elapsed_seconds"`
}

// errNotSidecar answers the /v1/cassandra routes of a backend that is not a sidecar.
var errNotSidecar = Conflict(errors.New("this node has no cassandra section: it is not the sidecar of a Cassandra node"))

// cassandraRoutes:
//
//	GET  /v1/cassandra/ring    CassandraRing
//	POST /v1/cassandra/import  CassandraImportRequest → CassandraImportResult (synchronous)
//	POST /v1/cassandra/rebuild CassandraRebuildRequest (may be {}) → OpStatus (follow GET /v1/ops)
//	POST /v1/cassandra/load    CassandraLoadRequest → OpStatus (follow GET /v1/ops)
//	POST /v1/cassandra/replace CassandraReplaceRequest → OpStatus (follow GET /v1/ops)
func (s *Server) cassandraRoutes(mux *http.ServeMux) {
	cb, _ := s.b.(CassandraBackend)
	mux.HandleFunc("GET /v1/cassandra/ring", func(w http.ResponseWriter, r *http.Request) {
		if cb == nil {
			answer(w, nil, errNotSidecar)
			return
		}
		v, err := cb.CassandraRing(r.Context())
		answer(w, v, err)
	})
	postCassandra(mux, "POST /v1/cassandra/import", cb, func(r *http.Request, req CassandraImportRequest) (any, error) {
		return cb.CassandraImport(r.Context(), req)
	})
	postCassandra(mux, "POST /v1/cassandra/load", cb, func(_ *http.Request, req CassandraLoadRequest) (any, error) {
		return cb.StartCassandraLoad(req)
	})
	postCassandra(mux, "POST /v1/cassandra/rebuild", cb, func(_ *http.Request, req CassandraRebuildRequest) (any, error) {
		return cb.StartCassandraRebuild(req)
	})
	postCassandra(mux, "POST /v1/cassandra/replace", cb, func(_ *http.Request, req CassandraReplaceRequest) (any, error) {
		return cb.StartCassandraReplace(req)
	})
}

// postCassandra routes a sidecar POST: the body decoded strictly into Req (400 otherwise),
// refused on a node that is no sidecar (cb nil), then do's answer.
func postCassandra[Req any](mux *http.ServeMux, pattern string, cb CassandraBackend, do func(*http.Request, Req) (any, error)) {
	mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		var req Req
		if err := decodeStrict(http.MaxBytesReader(w, r.Body, maxRequestBody), &req); err != nil {
			writeError(w, http.StatusBadRequest, err.Error())
			return
		}
		if cb == nil {
			answer(w, nil, errNotSidecar)
			return
		}
		res, err := do(r, req)
		answer(w, res, err)
	})
}
