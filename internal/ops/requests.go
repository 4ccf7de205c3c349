package ops

import "github.com/sluicedb/sluice/internal/repair"

// FetchOpRequest is the peer operation fetch: pull keyspace.table's ranges from member
// Source into this node's table directory (the existing one, or
// <first data dir>/<keyspace>/<table>-<table_id>). Between members the source is named and
// the fetching node looks its address up; Peer (its stream address) is set only by the node
// itself.
type FetchOpRequest struct {
	Source   string `json:"source"`
	Peer     string `json:"peer,omitempty"`
	Keyspace string `json:"keyspace"`
	Table    string `json:"table"`
	TableID  string `json:"table_id"`
	Ranges   string `json:"ranges"` // token.RangeSet text: (l,r],(l,r]
}

// FetchOpResponse is what a fetch installed.
type FetchOpResponse struct {
	Dir           string   `json:"dir"`
	SSTables      []string `json:"sstables"` // installed path prefixes
	Skipped       int      `json:"skipped"`
	BytesReceived int64    `json:"bytes_received"`
}

// TreeRequest is the body of the peer call repair_tree: one tree of the given depth per range
// of Ranges, which must be normalized (no range wraps except to the end of the ring).
type TreeRequest struct {
	Keyspace string `json:"keyspace"`
	Table    string `json:"table"`
	Ranges   string `json:"ranges"`
	Depth    int    `json:"depth"`
}

// TreeResponse holds the trees of a TreeRequest, in the order of its ranges.
type TreeResponse struct {
	Trees []*repair.Tree `json:"trees"`
}

// DigestRequest is the body of the peer call repair_digests: the digests of the partitions of
// keyspace.table in Ranges (normalized) with tokens after After (from the start when absent),
// one page of at most Limit (repair.MaxDigestsPerPage when larger or not positive).
type DigestRequest struct {
	Keyspace string `json:"keyspace"`
	Table    string `json:"table"`
	Ranges   string `json:"ranges"`
	After    *int64 `json:"after,omitempty"`
	Limit    int    `json:"limit"`
}

// DigestResponse is one page: the digests (repair.AppendDigests, base64) and whether more
// follow the last token.
type DigestResponse struct {
	Digests string `json:"digests"`
	More    bool   `json:"more"`
}
