package testcluster

import (
	"net"
	"testing"
	"time"
)

// echo serves a UDP echo on loopback until the test ends.
func echo(t *testing.T) string {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	go func() {
		buf := make([]byte, 2048)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			pc.WriteTo(buf[:n], from)
		}
	}()
	return pc.LocalAddr().String()
}

// roundTrips sends n datagrams through the proxy and counts the echoes that come back.
func roundTrips(t *testing.T, p *Proxy, n int, timeout time.Duration) int {
	t.Helper()
	c, err := net.Dial("udp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	got := 0
	buf := make([]byte, 16)
	for i := range n {
		c.Write([]byte{byte(i)})
		c.SetReadDeadline(time.Now().Add(timeout))
		if _, err := c.Read(buf); err == nil {
			got++
		}
	}
	return got
}

// The proxy forwards both ways, drops everything while cut, forwards again once healed, and
// drops about the configured fraction.
func TestProxyForwardsCutsHealsAndDrops(t *testing.T) {
	p, err := NewProxy(echo(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if got := roundTrips(t, p, 20, time.Second); got != 20 {
		t.Fatalf("forwarded %d of 20 round trips", got)
	}
	p.Cut()
	if got := roundTrips(t, p, 5, 100*time.Millisecond); got != 0 {
		t.Fatalf("%d round trips through a cut proxy", got)
	}
	p.Heal()
	if got := roundTrips(t, p, 20, time.Second); got != 20 {
		t.Fatalf("after heal %d of 20 round trips", got)
	}
	// 50% each way: a round trip survives with probability 1/4.
	p.SetLoss(0.5)
	if got := roundTrips(t, p, 200, 20*time.Millisecond); got < 20 || got > 90 {
		t.Fatalf("%d of 200 round trips at 50%% loss each way, want about 50", got)
	}
	p.SetLoss(0)
	p.SetDelay(30 * time.Millisecond)
	start := time.Now()
	if got := roundTrips(t, p, 3, time.Second); got != 3 || time.Since(start) < 180*time.Millisecond {
		t.Fatalf("delayed: %d round trips in %v", got, time.Since(start))
	}
	if fw, dr := p.Counts(); fw == 0 || dr == 0 {
		t.Fatalf("counts forwarded %d dropped %d", fw, dr)
	}
}
