package node

import (
	"context"
)

// peers is what the cluster operations need of the members: the network side of a stream
// plan. The operations' logic (pairing transfers, the journal, progress, failures) runs
// against it, so it is testable without a network; netPeers is the real one.
type peers interface {
	// tables lists keyspace's tables on member name (this node answers for itself).
	tables(ctx context.Context, name, keyspace string) ([]TableStatus, error)
	// fetch has member to (possibly this node) pull req from member req.Source, and returns
	// when it is done.
	fetch(ctx context.Context, to string, req FetchOpRequest) (FetchOpResponse, error)
}

// netPeers reaches members with peer calls; only proven members are asked or fetched from.
type netPeers struct{ c *cluster }

func (p netPeers) tables(ctx context.Context, name, keyspace string) ([]TableStatus, error) {
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

func (p netPeers) fetch(ctx context.Context, to string, req FetchOpRequest) (FetchOpResponse, error) {
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
