package node

import (
	"context"

	"github.com/sluicedb/sluice/internal/ops"
)

// netPeers is ops.Peers over the network: members reached with peer calls (peerapi.go); only
// proven members are asked or fetched from.
type netPeers struct{ c *cluster }

var _ ops.Peers = netPeers{}

func (p netPeers) Tables(ctx context.Context, name, keyspace string) ([]TableStatus, error) {
	c := p.c
	if name == c.n.cfg.Name {
		all, err := c.n.tables()
		var out []TableStatus
		for _, t := range all {
			if t.Keyspace == keyspace {
				out = append(out, t)
			}
		}
		return out, err
	}
	m, err := proven(c.members(), name)
	if err != nil {
		return nil, err
	}
	var res TablesResponse
	err = c.call(ctx, m, peerTables, TablesRequest{Keyspace: keyspace}, &res)
	return res.Tables, err
}

func (p netPeers) Fetch(ctx context.Context, to string, req FetchOpRequest) (FetchOpResponse, error) {
	c := p.c
	members := c.members()
	if to != c.n.cfg.Name {
		dst, err := proven(members, to)
		if err != nil {
			return FetchOpResponse{}, err
		}
		var res FetchOpResponse
		err = c.call(ctx, dst, peerFetch, req, &res)
		return res, err
	}
	src, err := proven(members, req.Source)
	if err != nil {
		return FetchOpResponse{}, err
	}
	if req.Peer, err = streamAddr(src); err != nil {
		return FetchOpResponse{}, err
	}
	return c.n.Fetch(ctx, req)
}

func (p netPeers) Proven(name string) error {
	_, err := proven(p.c.members(), name)
	return err
}

func (p netPeers) RingView(ctx context.Context, name string) (RingView, error) {
	var v RingView
	m, err := proven(p.c.members(), name)
	if err == nil {
		err = p.c.call(ctx, m, peerRing, nil, &v)
	}
	return v, err
}

func (p netPeers) Trees(ctx context.Context, name string, req TreeRequest) (TreeResponse, error) {
	var tr TreeResponse
	m, err := proven(p.c.members(), name)
	if err == nil {
		err = p.c.callHeavy(ctx, m, peerRepairTree, req, &tr)
	}
	return tr, err
}

func (p netPeers) Digests(ctx context.Context, name string, req DigestRequest) (DigestResponse, error) {
	var dr DigestResponse
	m, err := proven(p.c.members(), name)
	if err == nil {
		err = p.c.callHeavy(ctx, m, peerRepairDigests, req, &dr)
	}
	return dr, err
}
