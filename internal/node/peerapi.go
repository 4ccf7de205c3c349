package node

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"slices"

	"github.com/quic-go/quic-go"

	"github.com/sluicedb/sluice/internal/lib/cqlname"
	"github.com/sluicedb/sluice/internal/lib/tlsx"
	"github.com/sluicedb/sluice/internal/ops"
	"github.com/sluicedb/sluice/internal/peerrpc"
	"github.com/sluicedb/sluice/internal/repair"
	"github.com/sluicedb/sluice/membership/gossip"
	"github.com/sluicedb/sluice/sstable/token"
)

// Peer operations: what nodes ask of each other, over peerrpc (QUIC with mutual TLS on the
// stream socket), never over the admin API. Their bounds are peerrpc's table, which the
// server holds every call to before peerCall sees it.
const (
	peerIdentity      = peerrpc.MethodIdentity      // → IdentityResponse: the proof of a member's name
	peerLoad          = peerrpc.MethodLoad          // → LoadResponse
	peerTables        = peerrpc.MethodTables        // TablesRequest → TablesResponse
	peerRing          = peerrpc.MethodRing          // → RingView without loads
	peerFetch         = peerrpc.MethodFetch         // FetchOpRequest → FetchOpResponse, when the fetch is done
	peerRepairTree    = peerrpc.MethodRepairTree    // TreeRequest → TreeResponse
	peerRepairDigests = peerrpc.MethodRepairDigests // DigestRequest → DigestResponse
	peerCassandraLoad = peerrpc.MethodCassandraLoad // CassandraLoadPeerRequest → CassandraLoadPeerResponse (cassandra_load.go)
)

// maxPeerFetches bounds the fetches other members' operations run on this node at once; more
// wait. Every coordinator runs at most maxParallelTransfers pairs at a time.
const maxPeerFetches = 4 * ops.MaxParallelTransfers

// IdentityResponse answers peerIdentity.
type IdentityResponse struct {
	Name string `json:"name"`
}

// TablesRequest asks for a keyspace's tables on a peer.
type TablesRequest struct {
	Keyspace string `json:"keyspace"`
}

// TablesResponse lists them.
type TablesResponse struct {
	Tables []TableStatus `json:"tables"`
}

// servePeer is the stream server's handler for peerrpc connections. The server counts the
// calls its limits refuse in the node's metrics (set here, as New builds the server).
func (n *Node) servePeer(ctx context.Context, conn *quic.Conn, caller tlsx.PeerIdentity) {
	n.peerSrv.OnRefuse(n.countPeerRefusal)
	n.peerSrv.ServeConn(ctx, conn, caller)
}

// peerCall routes one peer call the server admitted: its method is in peerrpc's table, its
// body within the method's bounds, and a heavy call holds its caller's slot and its reserved
// memory. The caller holds a node certificate of the cluster CA (the stream server checked);
// calls that change this node's data also need the caller to be a proven member of this
// node's ring.
func (n *Node) peerCall(ctx context.Context, caller tlsx.PeerIdentity, method string, body []byte) (any, error) {
	decode := func(v any) error {
		if err := peerrpc.DecodeBody(body, v); err != nil {
			return peerrpc.Errorf(peerrpc.CodeBadRequest, "%s: %v", method, err)
		}
		return nil
	}
	switch method {
	case peerIdentity:
		return IdentityResponse{Name: n.cfg.Name}, nil
	case peerLoad:
		l, err := n.Load()
		return LoadResponse{LoadBytes: l}, err
	case peerTables:
		var req TablesRequest
		if err := decode(&req); err != nil {
			return nil, err
		}
		if err := cqlname.Check("keyspace", req.Keyspace); err != nil {
			return nil, peerrpc.Errorf(peerrpc.CodeBadRequest, "%v", err)
		}
		tables, err := n.tables()
		if err != nil {
			return nil, err
		}
		out := TablesResponse{Tables: []TableStatus{}}
		for _, t := range tables {
			if t.Keyspace == req.Keyspace {
				out.Tables = append(out.Tables, t)
			}
		}
		return out, nil
	case peerRing:
		c, err := n.requireCluster()
		if err != nil {
			return nil, peerrpc.Errorf(peerrpc.CodeConflict, "%v", err)
		}
		return c.view(func(gossip.Member) int64 { return -1 }), nil
	case peerFetch:
		var req FetchOpRequest
		if err := decode(&req); err != nil {
			return nil, err
		}
		return n.peerFetch(ctx, caller, req)
	case peerCassandraLoad:
		var req CassandraLoadPeerRequest
		if err := decode(&req); err != nil {
			return nil, err
		}
		return n.peerCassandraLoad(ctx, caller, req)
	case peerRepairTree:
		var req TreeRequest
		if err := decode(&req); err != nil {
			return nil, err
		}
		tr, err := n.repairTree(ctx, req)
		if err != nil {
			return nil, err
		}
		return treesAnswer(tr.Trees), nil
	case peerRepairDigests:
		var req DigestRequest
		if err := decode(&req); err != nil {
			return nil, err
		}
		ds, more, err := n.digestPage(ctx, req)
		if err != nil {
			return nil, err
		}
		return digestsAnswer(ds, more), nil
	}
	return nil, peerrpc.Errorf(peerrpc.CodeUnknown, "no peer operation %q", method)
}

// peerFetch runs a fetch another member's operation asked for. The source is named, not
// addressed: its stream address comes from this node's own view of proven members, so a
// caller cannot point this node at an address of its choosing.
func (n *Node) peerFetch(ctx context.Context, caller tlsx.PeerIdentity, req FetchOpRequest) (FetchOpResponse, error) {
	c, err := n.requireCluster()
	if err != nil {
		return FetchOpResponse{}, peerrpc.Errorf(peerrpc.CodeConflict, "%v", err)
	}
	if req.Peer != "" {
		return FetchOpResponse{}, peerrpc.Errorf(peerrpc.CodeBadRequest, "fetch: name the source node, not an address")
	}
	members := c.members()
	if _, err := proven(members, caller.Name); err != nil {
		return FetchOpResponse{}, peerrpc.Errorf(peerrpc.CodeUnauthorized, "fetch asked by %s: %v", caller.Name, err)
	}
	src, err := proven(members, req.Source)
	if err != nil {
		return FetchOpResponse{}, peerrpc.Errorf(peerrpc.CodeBadRequest, "fetch source: %v", err)
	}
	if req.Peer, err = streamAddr(src); err != nil {
		return FetchOpResponse{}, err
	}
	// Members' fetch requests queue for a bounded number of slots: one member cannot start
	// fetches without end.
	select {
	case n.peerFetches <- struct{}{}:
		defer func() { <-n.peerFetches }()
	case <-ctx.Done():
		return FetchOpResponse{}, ctx.Err()
	}
	// The fetch stops when the caller goes away (ctx) or this node stops.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(n.runCtx, cancel)()
	res, err := n.Fetch(ctx, req)
	if isBadRequest(err) {
		return res, peerrpc.Errorf(peerrpc.CodeBadRequest, "%v", err)
	}
	return res, err
}

// proven is member name when it is alive, has proven its identity and announced a stream
// address.
func proven(members map[string]gossip.Member, name string) (gossip.Member, error) {
	m, ok := members[name]
	switch {
	case !ok:
		return m, fmt.Errorf("%q is not a member", name)
	case m.Identity != gossip.IdentityProven:
		return m, fmt.Errorf("member %q has not proven its identity (%s)", name, m.Identity)
	case m.Liveness != gossip.StateAlive:
		return m, fmt.Errorf("member %q is %s", name, m.Liveness)
	case m.Meta.StreamAddr == "":
		return m, fmt.Errorf("member %q announced no stream address", name)
	}
	return m, nil
}

// RepairTrees builds this node's Merkle trees of keyspace.table for the specs
// (ops.Local.RepairTrees). A table this node does not hold has empty trees.
func (n *Node) RepairTrees(ctx context.Context, keyspace, table string, specs []repair.Spec) ([]*repair.Tree, error) {
	return n.local.RepairTrees(ctx, keyspace, table, specs)
}

// repairTree builds this node's trees for a peer's repair.
func (n *Node) repairTree(ctx context.Context, req TreeRequest) (TreeResponse, error) {
	if err := cqlname.CheckTable(req.Keyspace, req.Table); err != nil {
		return TreeResponse{}, peerrpc.Errorf(peerrpc.CodeBadRequest, "tree request: %v", err)
	}
	rs, err := token.ParseRanges(token.Murmur3, req.Ranges)
	if err != nil {
		return TreeResponse{}, peerrpc.Errorf(peerrpc.CodeBadRequest, "tree request: %v", err)
	}
	specs := make([]repair.Spec, len(rs))
	for i, rg := range rs {
		specs[i] = repair.Spec{Range: rg, Depth: req.Depth}
	}
	trees, err := n.RepairTrees(ctx, req.Keyspace, req.Table, specs)
	if errors.Is(err, repair.ErrBadTree) {
		return TreeResponse{}, peerrpc.Errorf(peerrpc.CodeBadRequest, "%v", err)
	}
	return TreeResponse{Trees: trees}, err
}

// repairDigests lists one page of this node's partition digests for a peer's repair (the
// peer call encodes digestPage's page itself: digestsAnswer).
func (n *Node) repairDigests(ctx context.Context, req DigestRequest) (DigestResponse, error) {
	ds, more, err := n.digestPage(ctx, req)
	if err != nil {
		return DigestResponse{}, err
	}
	return DigestResponse{Digests: base64.StdEncoding.EncodeToString(repair.AppendDigests(nil, ds)), More: more}, nil
}

// digestPage is one page of this node's partition digests for a peer's repair.
func (n *Node) digestPage(ctx context.Context, req DigestRequest) ([]repair.Digest, bool, error) {
	if err := cqlname.CheckTable(req.Keyspace, req.Table); err != nil {
		return nil, false, peerrpc.Errorf(peerrpc.CodeBadRequest, "digest request: %v", err)
	}
	rs, err := token.ParseRanges(token.Murmur3, req.Ranges)
	if err != nil {
		return nil, false, peerrpc.Errorf(peerrpc.CodeBadRequest, "digest request: %v", err)
	}
	limit := req.Limit
	if limit <= 0 || limit > repair.MaxDigestsPerPage {
		limit = repair.MaxDigestsPerPage
	}
	tables, release, err := n.local.OpenTable(req.Keyspace, req.Table)
	if err != nil {
		return nil, false, err
	}
	defer release()
	ds, more, err := repair.Digests(ctx, tables, rs, req.After, limit)
	if errors.Is(err, repair.ErrBadTree) {
		return nil, false, peerrpc.Errorf(peerrpc.CodeBadRequest, "%v", err)
	}
	return ds, more, err
}

// call asks member m to run a peer operation, proving on the way that it is m.
func (c *cluster) call(ctx context.Context, m gossip.Member, method string, req, out any) error {
	addr, err := streamAddr(m)
	if err != nil {
		return err
	}
	return c.n.peerClient.Call(ctx, addr, m.Name, method, req, out)
}

// streamAddr is where member m's stream server is reached: its announced stream address,
// with the host of its gossip address when it announced a wildcard (a node listening on
// every interface, stream_addr ":7400").
func streamAddr(m gossip.Member) (string, error) {
	host, port, err := net.SplitHostPort(m.Meta.StreamAddr)
	if err != nil {
		return "", fmt.Errorf("%s: stream address %q: %v", m.Name, m.Meta.StreamAddr, err)
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		if host, _, err = net.SplitHostPort(m.Addr); err != nil {
			return "", fmt.Errorf("%s: wildcard stream address and gossip address %q: %v", m.Name, m.Addr, err)
		}
	}
	return net.JoinHostPort(host, port), nil
}

// verifyMember is gossip's Verifier: member m proves it holds m.Name's node certificate of
// the cluster CA at the stream address it announced, and answers the peer protocol.
func (n *Node) verifyMember(ctx context.Context, m gossip.Member) error {
	addr, err := streamAddr(m)
	if err != nil {
		return err
	}
	var id IdentityResponse
	if err := n.peerClient.Call(ctx, addr, m.Name, peerIdentity, nil, &id); err != nil {
		return err
	}
	if id.Name != m.Name {
		return fmt.Errorf("answers as %q", id.Name)
	}
	return nil
}

// authorizeStream is the stream server's Authorizer: node certificates stream every table; a
// client certificate only the keyspaces client_fetch_keyspaces lists.
func (n *Node) authorizeStream(peer tlsx.PeerIdentity, keyspace, table string) error {
	if err := cqlname.CheckTable(keyspace, table); err != nil {
		return err
	}
	if peer.Role == tlsx.RoleNode || slices.Contains(n.cfg.ClientFetchKeyspaces, keyspace) {
		return nil
	}
	return fmt.Errorf("%s certificate %q may not fetch keyspace %q (client_fetch_keyspaces)", peer.Role, peer.Name, keyspace)
}
