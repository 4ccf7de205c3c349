package stream

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/sluicedb/sluice/internal/lib/fsx"
	"github.com/sluicedb/sluice/wire"
)

// tcpPlane is a Server's TCP data listener: it hands each connection that presents an
// outstanding one-time token (the first 32 bytes it sends) to the session that offered the
// token, and closes every other connection without writing a byte. Under transport tls the
// connection first completes a TLS 1.3 handshake with a client certificate of the cluster
// CA, and the token travels inside it.
type tcpPlane struct {
	ln      net.Listener
	tls     *tls.Config   // transport tls: the data connections' server config; nil for tcp
	timeout time.Duration // to present a token after connecting, and to redeem an offer
	log     zerolog.Logger

	mu      sync.Mutex
	offers  []*tcpOffer
	pending map[net.Conn]struct{} // connections still presenting a token
	closed  bool
}

// tcpOffer is one session's outstanding token; conn receives the connection presenting it.
type tcpOffer struct {
	token    [32]byte
	deadline time.Time
	conn     chan *dataConn
}

// listenTCP opens the data listener at addr, or, when addr is empty, on quicAddr's host
// with an ephemeral port; with tlsConf (transport tls) every connection is TLS. Accepted
// connections inherit the listener's congestion control, cfg.TCPCongestion.
func listenTCP(cfg Config, tlsConf *tls.Config, quicAddr net.Addr, log zerolog.Logger) (*tcpPlane, error) {
	addr := cfg.TCPAddr
	if addr == "" {
		host, _, err := net.SplitHostPort(quicAddr.String())
		if err != nil {
			return nil, err
		}
		addr = net.JoinHostPort(host, "0")
	}
	lc := net.ListenConfig{Control: congestionControl(cfg.TCPCongestion)}
	ln, err := lc.Listen(context.Background(), "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("stream: TCP data listener: %w", err)
	}
	p := &tcpPlane{ln: ln, timeout: cfg.HandshakeTimeout, log: log, pending: map[net.Conn]struct{}{}}
	if tlsConf != nil {
		p.tls = dataTLS(tlsConf)
	}
	return p, nil
}

// serve accepts connections until the listener closes.
func (p *tcpPlane) serve() {
	var delay time.Duration
	for {
		c, err := p.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of descriptors under a connection flood, or a connection reset before it
			// was accepted: back off and go on, as net/http's server does, rather than stop
			// serving every later session.
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			p.log.Warn().Err(err).Dur("retry_in", delay).Msg("TCP data listener: accept failed")
			time.Sleep(delay)
			continue
		}
		delay = 0
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			c.Close()
			return
		}
		p.pending[c] = struct{}{}
		p.mu.Unlock()
		go p.admit(c.(*net.TCPConn))
	}
}

// admit reads the token of c (after the TLS handshake, under transport tls) and hands c to
// the session whose offer it redeems.
func (p *tcpPlane) admit(c *net.TCPConn) {
	var tok [32]byte
	dc := &dataConn{raw: c, c: c}
	c.SetDeadline(time.Now().Add(p.timeout))
	var err error
	if p.tls != nil {
		ctx, cancel := context.WithTimeout(context.Background(), p.timeout)
		dc.c, err = handshakeServer(ctx, c, p.tls)
		cancel()
		if err != nil {
			p.log.Warn().Str("peer", c.RemoteAddr().String()).Err(err).Msg("TLS data connection failed its handshake")
			dc.c = c
		}
	}
	if err == nil {
		_, err = io.ReadFull(dc.c, tok[:])
	}
	p.mu.Lock()
	delete(p.pending, c)
	var o *tcpOffer
	if err == nil && !p.closed {
		o = p.redeem(tok)
	}
	p.mu.Unlock()
	if o == nil {
		p.log.Warn().Str("peer", c.RemoteAddr().String()).Msg("TCP data connection without a valid token closed")
		c.Close()
		return
	}
	c.SetDeadline(time.Time{})
	o.conn <- dc // buffered, and an offer is redeemed once
}

// redeem removes and returns the unexpired offer of tok, or nil. Every outstanding token
// is compared in constant time, so the time taken says nothing about how close a guess
// came. p.mu is held.
func (p *tcpPlane) redeem(tok [32]byte) *tcpOffer {
	now := time.Now()
	var found *tcpOffer
	for _, o := range p.offers {
		if subtle.ConstantTimeCompare(o.token[:], tok[:]) == 1 && now.Before(o.deadline) {
			found = o
		}
	}
	if found != nil {
		p.remove(found)
	}
	return found
}

func (p *tcpPlane) remove(o *tcpOffer) {
	for i, x := range p.offers {
		if x == o {
			p.offers = append(p.offers[:i], p.offers[i+1:]...)
			return
		}
	}
}

// offer makes a new one-time token, valid for p.timeout.
func (p *tcpPlane) offer() (*tcpOffer, error) {
	o := &tcpOffer{deadline: time.Now().Add(p.timeout), conn: make(chan *dataConn, 1)}
	if _, err := rand.Read(o.token[:]); err != nil {
		return nil, err
	}
	p.mu.Lock()
	p.offers = append(p.offers, o)
	p.mu.Unlock()
	return o, nil
}

// withdraw forgets o and closes a connection that redeemed it but was never taken.
func (p *tcpPlane) withdraw(o *tcpOffer) {
	p.mu.Lock()
	p.remove(o)
	p.mu.Unlock()
	select {
	case c := <-o.conn:
		c.close()
	default:
	}
}

// close stops the listener and closes the connections still presenting tokens.
func (p *tcpPlane) close() {
	p.mu.Lock()
	p.closed = true
	for c := range p.pending {
		c.Close()
	}
	p.offers = nil
	p.mu.Unlock()
	p.ln.Close()
}

// advertised is the address the plane is offered at.
func (p *tcpPlane) advertised() string { return p.ln.Addr().String() }

// dataAddr resolves the Addr of a TCPDataPlane: an unspecified host (a listener bound to
// every interface) means the host the receiver reached the sender at, peer.
func dataAddr(offered, peer string) (string, error) {
	host, port, err := net.SplitHostPort(offered)
	if err != nil {
		return "", fmt.Errorf("%w: TCPDataPlane address %q: %w", ErrProtocol, offered, err)
	}
	peerHost, _, err := net.SplitHostPort(peer)
	if err != nil {
		return "", err
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = peerHost
	}
	// A sender names only its own host: otherwise a peer could make the receiver dial (and
	// present a token to) any address it can reach.
	if !sameHost(host, peerHost) {
		return "", fmt.Errorf("%w: TCPDataPlane address %q is not on the peer's host %s", ErrProtocol, offered, peerHost)
	}
	return net.JoinHostPort(host, port), nil
}

// sameHost compares two hosts, as IP addresses when both are (so ::ffff:127.0.0.1 is
// 127.0.0.1), else as names.
func sameHost(a, b string) bool {
	if x, y := net.ParseIP(a), net.ParseIP(b); x != nil && y != nil {
		return x.Equal(y)
	}
	return strings.EqualFold(a, b)
}

// dialData dials a TCPDataPlane offer and presents its token. With tlsConf (transport
// tls) it first completes a TLS 1.3 handshake and checks that the server presented the
// certificate of the session's peer, sessionPeer (the QUIC connection's).
func dialData(ctx context.Context, cfg Config, tlsConf *tls.Config, sessionPeer []*x509.Certificate, dp *wire.TCPDataPlane, peer string) (*dataConn, error) {
	addr, err := dataAddr(dp.Addr, peer)
	if err != nil {
		return nil, err
	}
	d := net.Dialer{Timeout: cfg.HandshakeTimeout, Control: congestionControl(cfg.TCPCongestion)}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("dialing the TCP data plane at %s: %w", addr, err)
	}
	dc := &dataConn{raw: c.(*net.TCPConn), c: c}
	dc.raw.SetDeadline(time.Now().Add(cfg.HandshakeTimeout))
	if tlsConf != nil {
		conf := dataTLS(tlsConf)
		if conf.ServerName == "" {
			// As quic-go does for the control connection: the name is the host dialled for
			// it, so the data connection verifies the same name.
			conf.ServerName, _, _ = net.SplitHostPort(peer)
		}
		tc := tls.Client(dc.raw, conf)
		if err := tc.HandshakeContext(ctx); err != nil {
			dc.close()
			return nil, fmt.Errorf("TLS handshake with the data plane at %s: %w", addr, err)
		}
		if err := sameLeaf("TLS data plane at "+addr, tc.ConnectionState().PeerCertificates, sessionPeer); err != nil {
			dc.close()
			return nil, err
		}
		dc.c = tc
	}
	if _, err := dc.c.Write(dp.Token[:]); err != nil {
		dc.close()
		return nil, fmt.Errorf("presenting the TCP data token to %s: %w", addr, err)
	}
	dc.raw.SetDeadline(time.Time{})
	return dc, nil
}

// parseDataHeader is wire.ParseDataHeader with the peer's mistakes as protocol errors.
func parseDataHeader(b, scratch []byte, lim wire.Limits, d *wire.Data) (hn int, payload int64, err error) {
	hn, payload, err = wire.ParseDataHeader(b, scratch, lim, d)
	if err != nil && !errors.Is(err, io.EOF) {
		err = fmt.Errorf("%w: TCP data connection: %w", ErrProtocol, err)
	}
	return hn, payload, err
}

// tcpReader reads Data frames from the TCP data connection: each header through a small
// buffer, and its payload from what the buffer already holds, then straight from the
// connection (into a file with splice when it is plain TCP, or into memory). It reads an
// sstable's QUIC stream the same way (quicIn), r its stream and c nil; the stream's end
// between two frames then ends its data (endsData).
type tcpReader struct {
	c        net.Conn
	r        io.Reader // c, or a QUIC stream
	endsData bool      // an end of r between two frames is the end of the data, not an error
	lim      wire.Limits
	buf      []byte
	scratch  []byte
	off      int
	n        int
	left     int64 // payload bytes of the current frame not yet consumed
}

func newTCPReader(c net.Conn, lim wire.Limits) *tcpReader {
	// Small, so that little of each payload passes through user space on its way to a file.
	return &tcpReader{c: c, r: c, lim: lim, buf: make([]byte, wire.MaxDataHeader), scratch: make([]byte, wire.DataHeaderScratch)}
}

// header reads the next frame's header into d and returns its payload length. It must be
// called only once the previous payload has been consumed.
func (r *tcpReader) header(d *wire.Data) (int64, error) {
	if r.left != 0 {
		return 0, fmt.Errorf("stream: TCP data header read with %d payload bytes pending", r.left)
	}
	for {
		hn, n, err := parseDataHeader(r.buf[r.off:r.n], r.scratch, r.lim, d)
		if err == nil {
			r.off += hn
			r.left = n
			return n, nil
		}
		if !errors.Is(err, io.EOF) {
			return 0, err
		}
		if r.off > 0 {
			r.n = copy(r.buf, r.buf[r.off:r.n])
			r.off = 0
		}
		if r.n == len(r.buf) {
			return 0, fmt.Errorf("%w: Data header longer than %d bytes", ErrProtocol, len(r.buf))
		}
		k, err := r.r.Read(r.buf[r.n:])
		r.n += k
		if err != nil && k == 0 {
			if errors.Is(err, io.EOF) {
				if r.endsData && r.n == 0 {
					return 0, io.EOF
				}
				err = fmt.Errorf("%w: data stream closed", io.ErrUnexpectedEOF)
			}
			return 0, err
		}
	}
}

// buffered takes up to max payload bytes the header read already holds.
func (r *tcpReader) buffered(max int64) []byte {
	k := int(min(int64(r.n-r.off), r.left, max))
	b := r.buf[r.off : r.off+k]
	r.off += k
	r.left -= int64(k)
	return b
}

// toFile consumes the next n payload bytes into f at off: the buffered ones with pwrite,
// the rest with splice.
func (r *tcpReader) toFile(ctx context.Context, f *os.File, off, n int64) error {
	if n > r.left {
		return fmt.Errorf("stream: %d payload bytes wanted, %d left", n, r.left)
	}
	b := r.buffered(n)
	if len(b) > 0 {
		if _, err := f.WriteAt(b, off); err != nil {
			return err
		}
	}
	rest := n - int64(len(b))
	plain, ok := r.c.(*net.TCPConn)
	if !ok {
		return fmt.Errorf("stream: splice from a %T", r.c)
	}
	k, err := fsx.SpliceToFile(ctx, f, off+int64(len(b)), plain, rest)
	r.left -= k
	return err
}

// read consumes the next len(p) payload bytes into p.
func (r *tcpReader) read(p []byte) error {
	if int64(len(p)) > r.left {
		return fmt.Errorf("stream: %d payload bytes wanted, %d left", len(p), r.left)
	}
	k := copy(p, r.buffered(int64(len(p))))
	m, err := io.ReadFull(r.r, p[k:])
	r.left -= int64(m)
	return err
}

// skip consumes the rest of the current payload unread.
func (r *tcpReader) skip() error {
	r.buffered(r.left)
	k, err := io.CopyN(io.Discard, r.r, r.left)
	r.left -= k
	return err
}

// dataConn waits for the receiver to redeem the session's offer (once, at the first
// sstable) and returns the connection.
func (ss *sendSession) dataConn(ctx context.Context) (*dataConn, error) {
	if ss.data != nil {
		return ss.data, nil
	}
	t := time.NewTimer(time.Until(ss.offer.deadline))
	defer t.Stop()
	select {
	case c := <-ss.offer.conn:
		ss.data = c
		// A session that ends for any reason unblocks a write on its data connection.
		context.AfterFunc(ss.conn.Context(), func() { c.close() })
		if tc, ok := c.c.(*tls.Conn); ok {
			if err := sameLeaf("TLS data connection from "+c.raw.RemoteAddr().String(), tc.ConnectionState().PeerCertificates,
				ss.conn.ConnectionState().TLS.PeerCertificates); err != nil {
				return nil, err
			}
		}
		return c, nil
	case <-t.C:
		return nil, fmt.Errorf("%w: %s did not connect to the TCP data plane within %v", ErrProtocol, ss.peer, ss.srv.cfg.HandshakeTimeout)
	case <-ss.conn.Context().Done():
		return nil, fmt.Errorf("peer %s gone: %w", ss.peer, context.Cause(ss.conn.Context()))
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// readBackSize bounds the buffer through which the TCP receiver reads spliced Data.db
// bytes back for checking: small enough to stay in cache while it is CRC-checked.
const readBackSize = 256 << 10

// place places the payload of d (n bytes, admitted to slot s of in) from the TCP data
// connection. A file's payload is spliced into the file at its offset; Data.db bytes are
// then read back from the file (from the page cache, where the splice just put them) and
// fed to the chunk checker, the digest and, uncompressed, the CRC.db writer (installer.placed):
// the checks see exactly the bytes the file holds. Index and rows slices are read into
// memory, and so is every payload under TLS or bound for a Writable without a file. On an
// error the reader's left count says whether the payload was consumed whole.
func (rs *tcpIn) place(ctx context.Context, in *Incoming, inst installer, s int, d *wire.Data, n int64) error {
	var f *os.File
	var at int64
	var w Writable
	if w, at = inst.writable(d, n); w != nil && !rs.sealed {
		f = w.File()
	}
	if f == nil {
		// Bound for memory, or under TLS, where the payload passes through user space to be
		// opened anyway: read it whole (one frame) and check and write it from there.
		if int64(cap(rs.mem)) < n {
			rs.mem = make([]byte, n)
		}
		d.Payload = rs.mem[:n]
		if err := rs.data.read(d.Payload); err != nil {
			return err
		}
		return takeInMemory(in, inst, s, d)
	}
	if err := rs.data.toFile(ctx, f, at, n); err != nil {
		return err
	}
	if tw, ok := w.(interface{ wrote(off, n int64) }); ok {
		tw.wrote(at, n)
	}
	in.got[s] += uint64(n)
	if !in.isData(d) {
		return nil
	}
	if rs.readBack == nil {
		rs.readBack = make([]byte, readBackSize)
	}
	for off, end := at, at+n; off < end; {
		b := rs.readBack[:min(int64(len(rs.readBack)), end-off)]
		if err := readFull(f, "back "+f.Name(), b, off); err != nil {
			return err
		}
		if err := in.check(b); err != nil {
			return err
		}
		if err := inst.placed(d, b); err != nil {
			return err
		}
		off += int64(len(b))
	}
	return nil
}

// drain skips the rest of sstable id's data on the TCP data connection, up to the empty
// Data frame that ends it: the data of an sstable this receiver failed or refused.
func (rs *tcpIn) drain(id string) error {
	if err := rs.data.skip(); err != nil {
		return err
	}
	var d wire.Data
	for {
		n, err := rs.data.header(&d)
		if err != nil {
			return err
		}
		if d.SSTableID != id {
			return fmt.Errorf("%w: Data for sstable %q while skipping %q", ErrProtocol, d.SSTableID, id)
		}
		if n == 0 {
			return nil
		}
		if err := rs.data.skip(); err != nil {
			return err
		}
	}
}
