package gossip

import (
	"context"
	"crypto"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// BenchmarkConvergence4 measures how long a 4-node ring takes to converge: from the first
// node's Start until every node's Ring holds all four members with their current 256-token
// sets, every member proven (Verify answers at once, so the time is gossip's and the claims'
// signing and verification, not a TLS handshake's). docs/BENCHMARKS.md compares it with the
// unsigned protocol.
func BenchmarkConvergence4(b *testing.B) {
	var total time.Duration
	for b.Loop() {
		total += convergeOnce(b, 4)
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms/converge")
}

func convergeOnce(b *testing.B, n int) time.Duration {
	t := &testing.T{}
	c := &testCluster{t: t, label: fmt.Sprintf("bench-%d", time.Now().UnixNano()), log: newTestLogger(b), rng: rand.New(rand.NewPCG(1, 2))}
	var nodes []*Gossip
	start := time.Now()
	for i := range n {
		cfg := c.config(fmt.Sprintf("node%d", i))
		cfg.Verify = func(ctx context.Context, m Member) (crypto.PublicKey, error) { return c.pub(m.Name), nil }
		g, err := New(cfg)
		if err != nil {
			b.Fatal(err)
		}
		if err := g.SetTokens(c.tokens(256)); err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err = g.Start(ctx)
		cancel()
		if err != nil {
			b.Fatal(err)
		}
		nodes = append(nodes, g)
		c.nodes = nodes
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		done := true
		for _, g := range nodes {
			r, err := g.Ring()
			if err != nil || len(r.Members()) != n {
				done = false
				break
			}
		}
		if done {
			break
		}
		if time.Now().After(deadline) {
			b.Fatal("no convergence within 30s")
		}
		time.Sleep(time.Millisecond)
	}
	took := time.Since(start)
	for _, g := range nodes {
		g.Shutdown()
	}
	return took
}
