package testcluster

import (
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Proxy is a loopback UDP forwarder in front of one node's QUIC port. Every client address
// gets its own upstream socket, so the node's answers find their way back. It drops a
// configurable fraction of datagrams in both directions (all of them while cut) and can delay
// them. Its methods may be called concurrently.
type Proxy struct {
	pc     net.PacketConn
	target *net.UDPAddr

	dropPPM atomic.Int64 // datagrams dropped per million
	cut     atomic.Bool
	delay   atomic.Int64 // nanoseconds

	mu       sync.Mutex
	upstream map[string]*net.UDPConn

	forwarded, dropped atomic.Int64
	done               chan struct{}
	wg                 sync.WaitGroup
}

// NewProxy listens on a free loopback UDP port and forwards to target.
func NewProxy(target string) (*Proxy, error) { return NewProxyOn("127.0.0.1", target) }

// NewProxyOn listens on a free UDP port of host (the bridge's address, for nodes in network
// namespaces) and forwards to target.
func NewProxyOn(host, target string) (*Proxy, error) {
	ta, err := net.ResolveUDPAddr("udp", target)
	if err != nil {
		return nil, err
	}
	pc, err := net.ListenPacket("udp", net.JoinHostPort(host, "0"))
	if err != nil {
		return nil, err
	}
	p := &Proxy{pc: pc, target: ta, upstream: map[string]*net.UDPConn{}, done: make(chan struct{})}
	p.wg.Add(1)
	go p.serve()
	return p, nil
}

// Addr is the address clients reach the node at.
func (p *Proxy) Addr() string { return p.pc.LocalAddr().String() }

// Target is the node's own stream address.
func (p *Proxy) Target() string { return p.target.String() }

// SetLoss drops the fraction (0 to 1) of datagrams in each direction.
func (p *Proxy) SetLoss(fraction float64) { p.dropPPM.Store(int64(fraction * 1e6)) }

// SetDelay holds every datagram for d before forwarding it.
func (p *Proxy) SetDelay(d time.Duration) { p.delay.Store(int64(d)) }

// Cut drops everything until Heal: the node is partitioned from the data plane.
func (p *Proxy) Cut() { p.cut.Store(true) }

// Heal restores forwarding after Cut.
func (p *Proxy) Heal() { p.cut.Store(false) }

// Counts reports the datagrams forwarded and dropped so far.
func (p *Proxy) Counts() (forwarded, dropped int64) { return p.forwarded.Load(), p.dropped.Load() }

// Close stops forwarding and closes every socket.
func (p *Proxy) Close() error {
	select {
	case <-p.done:
		return nil
	default:
	}
	close(p.done)
	err := p.pc.Close()
	p.mu.Lock()
	for _, u := range p.upstream {
		u.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
	return err
}

func (p *Proxy) drop() bool {
	if p.cut.Load() {
		p.dropped.Add(1)
		return true
	}
	if ppm := p.dropPPM.Load(); ppm > 0 && rand.Int64N(1e6) < ppm {
		p.dropped.Add(1)
		return true
	}
	p.forwarded.Add(1)
	return false
}

// send forwards b through write now or after the configured delay.
func (p *Proxy) send(b []byte, write func([]byte)) {
	if p.drop() {
		return
	}
	d := time.Duration(p.delay.Load())
	if d <= 0 {
		write(b)
		return
	}
	c := append([]byte(nil), b...)
	time.AfterFunc(d, func() {
		select {
		case <-p.done:
		default:
			write(c)
		}
	})
}

func (p *Proxy) serve() {
	defer p.wg.Done()
	buf := make([]byte, 64<<10)
	for {
		n, from, err := p.pc.ReadFrom(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		u, err := p.upstreamFor(from)
		if err != nil {
			continue
		}
		p.send(buf[:n], func(b []byte) { u.Write(b) })
	}
}

// upstreamFor returns the socket that carries from's datagrams to the node, creating it and
// its reply loop on first use.
func (p *Proxy) upstreamFor(from net.Addr) (*net.UDPConn, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if u, ok := p.upstream[from.String()]; ok {
		return u, nil
	}
	select {
	case <-p.done:
		return nil, net.ErrClosed
	default:
	}
	u, err := net.DialUDP("udp", nil, p.target)
	if err != nil {
		return nil, err
	}
	p.upstream[from.String()] = u
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		buf := make([]byte, 64<<10)
		for {
			n, err := u.Read(buf)
			if err != nil {
				if errors.Is(err, net.ErrClosed) {
					return
				}
				// ICMP port unreachable while the node restarts: keep the mapping.
				continue
			}
			p.send(buf[:n], func(b []byte) { p.pc.WriteTo(b, from) })
		}
	}()
	return u, nil
}

// waitFor polls pred every interval until it holds, ctx ends or d passes.
func waitFor(ctx context.Context, d time.Duration, what string, pred func() (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	t := time.NewTicker(25 * time.Millisecond)
	defer t.Stop()
	var last error
	for {
		ok, err := pred()
		if ok {
			return nil
		}
		var f fatal
		if errors.As(err, &f) {
			return f.error
		}
		if err != nil {
			last = err
		}
		select {
		case <-ctx.Done():
			if last != nil {
				return errors.Join(&waitError{what: what, d: d}, last)
			}
			return &waitError{what: what, d: d}
		case <-t.C:
		}
	}
}

// fatal ends a waitFor at once: waiting longer cannot help (the process exited).
type fatal struct{ error }

type waitError struct {
	what string
	d    time.Duration
}

func (e *waitError) Error() string {
	return "waiting " + e.d.String() + " for " + e.what + ": timed out"
}
func (e *waitError) Unwrap() error { return ErrTimeout }
