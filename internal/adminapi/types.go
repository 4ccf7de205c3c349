package adminapi

import (
	"time"

	"github.com/sluicedb/sluice/stream"
)

// TableStatus summarises one table for GET /v1/status: its live sstables (those with a
// TOC.txt) across every data directory, and the bytes of their components.
type TableStatus struct {
	Keyspace string   `json:"keyspace"`
	Table    string   `json:"table"`
	ID       string   `json:"id"`
	Dirs     []string `json:"dirs"`
	SSTables int      `json:"sstables"`
	Bytes    int64    `json:"bytes"`
}

// Throughput holds streaming rate limits in bytes per second; 0 = unlimited. The JSON form is
// the body of POST /v1/throughput.
type Throughput struct {
	OutboundBytesPerSecond int64 `yaml:"outbound_bytes_per_second" json:"outbound_bytes_per_second"`
	InboundBytesPerSecond  int64 `yaml:"inbound_bytes_per_second" json:"inbound_bytes_per_second"`
}

// Status is GET /v1/status.
type Status struct {
	Name          string        `json:"name"`
	StreamAddr    string        `json:"stream_addr"`
	AdminAddr     string        `json:"admin_addr"`
	Transport     string        `json:"transport"` // quic or tcp
	Streaming     bool          `json:"streaming"` // false when running without a stream server
	DataDirs      []string      `json:"data_dirs"`
	Started       time.Time     `json:"started"`
	UptimeSeconds float64       `json:"uptime_seconds"`
	Throughput    Throughput    `json:"throughput"`
	Tables        []TableStatus `json:"tables"`
	// Ring is this node's view of the cluster, absent without membership or before it joined.
	// Other members' load_bytes are -1 here: GET /v1/ring asks each of them.
	Ring *RingView `json:"ring,omitempty"`
}

// LoadResponse is GET /v1/load.
type LoadResponse struct {
	LoadBytes int64 `json:"load_bytes"`
}

// StreamsResponse is GET /v1/streams.
type StreamsResponse struct {
	Sessions []stream.SessionStatus `json:"sessions"`
}

// ThroughputRequest is the body of POST /v1/throughput; an absent field keeps its limit.
type ThroughputRequest struct {
	OutboundBytesPerSecond *int64 `json:"outbound_bytes_per_second"`
	InboundBytesPerSecond  *int64 `json:"inbound_bytes_per_second"`
}

// ErrorResponse is the body of every 4xx and 5xx answer.
type ErrorResponse struct {
	Error string `json:"error"`
}

// MoveRequest is the body of POST /v1/ops/move; the token is a decimal string, since JSON
// numbers lose precision beyond 2^53 in many clients.
type MoveRequest struct {
	Token string `json:"token"`
}

// RebuildRequest is POST /v1/ops/rebuild: stream every range the node replicates from another
// replica, in SourceDC when given, as nodetool rebuild does for a node of a DC added to a
// keyspace's replication. Keyspace limits it to one configured keyspace.
type RebuildRequest struct {
	SourceDC string `json:"source_dc,omitempty"`
	Keyspace string `json:"keyspace,omitempty"`
}

// Operation kinds, as in OpStatus.Kind and the POST /v1/ops/{kind} paths.
const (
	OpBootstrap    = "bootstrap"
	OpDecommission = "decommission"
	OpMove         = "move"
	OpCleanup      = "cleanup"
	OpImport       = "import"
	OpRepair       = "repair"
	OpRebuild      = "rebuild"
	OpReplace      = "replace" // run by a node started with replace_address; POST retries it
)

// Operation states.
const (
	OpRunning  = "running"
	OpComplete = "complete"
	OpFailed   = "failed"
)

// OpStatus is one operation's progress and outcome (GET /v1/ops).
type OpStatus struct {
	ID        int               `json:"id"`
	Kind      string            `json:"kind"`
	Detail    string            `json:"detail,omitempty"` // arguments: the move's token, the table, the directory
	State     string            `json:"state"`
	Error     string            `json:"error,omitempty"`
	Started   time.Time         `json:"started"`
	Finished  time.Time         `json:"finished,omitzero"`
	Transfers []TransferStatus  `json:"transfers,omitempty"`
	Cleanup   []CleanupResult   `json:"cleanup,omitempty"`
	Imported  []ImportedSSTable `json:"imported,omitempty"`
	Repair    []RepairResult    `json:"repair,omitempty"`
	// CleanupChecks are what a cleanup's owners confirmed, per table directory with
	// partitions to drop.
	CleanupChecks []CleanupCheck `json:"cleanup_checks,omitempty"`
}

// TransferStatus is one table's share of one (From, To) transfer of a stream plan.
type TransferStatus struct {
	From          string `json:"from"`
	To            string `json:"to"`
	Keyspace      string `json:"keyspace"`
	Table         string `json:"table"`
	Ranges        string `json:"ranges"`
	State         string `json:"state"`
	Error         string `json:"error,omitempty"`
	SSTables      int    `json:"sstables"`
	Skipped       int    `json:"skipped"` // already installed by an interrupted earlier run
	BytesReceived int64  `json:"bytes_received"`
}

// OpsResponse is GET /v1/ops: the running operation and the recent finished ones, oldest first.
type OpsResponse struct {
	Ops []OpStatus `json:"ops"`
}

// CleanupRequest is the body of POST /v1/ops/cleanup; empty fields select every table of every
// configured keyspace (Keyspace alone: its tables).
type CleanupRequest struct {
	Keyspace string `json:"keyspace"`
	Table    string `json:"table"`
}

// CleanupResult is what cleanup did to one sstable.
type CleanupResult struct {
	SSTable    string   `json:"sstable"`
	Action     string   `json:"action"` // kept, dropped or split
	Children   []string `json:"children,omitempty"`
	Partitions int64    `json:"partitions"`
	Kept       int64    `json:"kept_partitions"`
}

// CleanupCheck is what cleanup established before dropping anything from one table
// directory. Each range of the ring it would drop partitions of must be confirmed by every
// node owning it on this node's ring: a live, proven member whose own ring makes it a replica
// and which holds each of those partitions with the same content. Confirmed ranges are
// dropped; refused ones are kept, and make the cleanup fail.
type CleanupCheck struct {
	Keyspace  string           `json:"keyspace"`
	Table     string           `json:"table"`
	Dir       string           `json:"dir"`
	Confirmed string           `json:"confirmed,omitempty"` // ranges dropped (token.RangeSet text)
	Refused   []CleanupRefusal `json:"refused,omitempty"`   // ranges kept
}

// CleanupRefusal is one owner's refusal of one range: the range was not cleaned.
type CleanupRefusal struct {
	Range  string `json:"range"` // the part of one ring range cleanup would have dropped
	Owner  string `json:"owner"` // empty when no other node owns it
	Reason string `json:"reason"`
}

// Cleanup actions.
const (
	CleanupKept    = "kept"
	CleanupDropped = "dropped"
	CleanupSplit   = "split"
)

// ImportRequest is the body of POST /v1/ops/import: adopt the sstables of Dir into
// keyspace.table. Dir should be a Cassandra table directory (<table>-<id>) when the table does
// not exist on this node yet, so that its id is known.
type ImportRequest struct {
	Keyspace string `json:"keyspace"`
	Table    string `json:"table"`
	Dir      string `json:"dir"`
}

// ImportedSSTable is one sstable an import installed.
type ImportedSSTable struct {
	Source     string `json:"source"`
	SSTable    string `json:"sstable"`
	Partitions int64  `json:"partitions"`
}

// RepairRequest is the body of POST /v1/ops/repair: compare keyspace.table with every other
// replica over Ranges (token.RangeSet text; empty: every range this node replicates) and
// stream the differing ranges both ways.
type RepairRequest struct {
	Keyspace string `json:"keyspace"`
	Table    string `json:"table"`
	Ranges   string `json:"ranges,omitempty"`
}

// RepairResult is one peer's share of a repair.
type RepairResult struct {
	Peer     string `json:"peer"`
	Keyspace string `json:"keyspace"`
	Table    string `json:"table"`
	// Ranges are the ranges both replicate, within the request: what was compared.
	Ranges string `json:"ranges"`
	Trees  int    `json:"trees"`
	// Partitions is how many partitions this node's trees covered.
	Partitions uint64 `json:"partitions"`
	// Mismatched are the leaf ranges whose hashes differed: their partitions' digests were
	// compared one by one.
	Mismatched string `json:"mismatched,omitempty"`
	// PartitionsFetched and PartitionsSent count the partitions of the mismatched leaves that
	// differed and were streamed from the peer and to it: a partition goes only to a replica
	// whose copies do not already include the other's.
	PartitionsFetched int `json:"partitions_fetched"`
	PartitionsSent    int `json:"partitions_sent"`
	// BytesFetched came from the peer; BytesSent is what the peer fetched from this node.
	BytesFetched int64  `json:"bytes_fetched"`
	BytesSent    int64  `json:"bytes_sent"`
	State        string `json:"state"`
	Error        string `json:"error,omitempty"`
}

// RingMember is one member in the ring view (GET /v1/ring, GET /v1/status).
type RingMember struct {
	Name      string  `json:"name"`
	State     string  `json:"state"` // JOINING, NORMAL, LEAVING, MOVING, LEFT, or "" before it announced one
	Up        bool    `json:"up"`
	Liveness  string  `json:"liveness"`   // alive, dead or left (gossip's view)
	LoadBytes int64   `json:"load_bytes"` // live sstable bytes; -1 when unknown
	Ownership float64 `json:"ownership"`  // fraction of the ring replicated, for OwnershipKeyspace
	Tokens    int     `json:"tokens"`
	// Identity is proven, pending or refused: only proven members are in the ring.
	Identity      string `json:"identity"`
	IdentityError string `json:"identity_error,omitempty"`
	DC            string `json:"dc"`
	Rack          string `json:"rack"`
	StreamAddr    string `json:"stream_addr"`
	AdminAddr     string `json:"admin_addr"`
	// ReplacedBy names the member that took this dead one's tokens (replace_address); a
	// replaced member is no longer in the ring and has no tokens in the view.
	ReplacedBy string `json:"replaced_by,omitempty"`
}

// RingToken is one token of the ring view.
type RingToken struct {
	Token int64  `json:"token"`
	Node  string `json:"node"`
	State string `json:"state"`
	Up    bool   `json:"up"`
	DC    string `json:"dc"`
	Rack  string `json:"rack"`
}

// RingView is this node's view of the cluster.
type RingView struct {
	Self  string `json:"self"`
	State string `json:"state"` // this node's ring state
	// OwnershipKeyspace is the keyspace whose strategy Ownership is computed for: the first
	// configured one, or "" for SimpleStrategy with RF 1.
	OwnershipKeyspace string       `json:"ownership_keyspace"`
	Members           []RingMember `json:"members"`
	Tokens            []RingToken  `json:"tokens"`
	// Error is why the ring could not be built (token sets still in flight), when it could not.
	Error string `json:"error,omitempty"`
}
