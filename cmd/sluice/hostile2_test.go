package main

// Hostile peers of issue 21's second campaign against real node processes: each test is one
// finding, played on loopback by a Go program holding exactly the keys the attacker is assumed
// to hold (the gossip key and a certificate of another CA, or a fresh key; for the stream
// findings, a receiver's own certificate and a SIGKILL). The repair_tree amplification finding
// is internal/node/peerbounds_test.go's.

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/quic-go/quic-go"

	"github.com/sluicedb/sluice/internal/adminapi"
	"github.com/sluicedb/sluice/internal/peerrpc"
	"github.com/sluicedb/sluice/membership/gossip/claim"
	"github.com/sluicedb/sluice/membership/ring"
	"github.com/sluicedb/sluice/sstable/gen"
	"github.com/sluicedb/sluice/sstable/version"
	"github.com/sluicedb/sluice/wire"
)

// ---- processes ----

// h2Buf is a buffer a child process writes while the test reads it.
type h2Buf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *h2Buf) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *h2Buf) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// h2Proc is a child process of the sluice binary (the test binary acting as it).
type h2Proc struct {
	cmd         *exec.Cmd
	stdout, err h2Buf
	done        chan struct{}
	code        int
}

// h2Start starts `sluice args...` as a process of its own; the test's end stops it (SIGTERM,
// then SIGKILL) and logs its output when the test failed.
func h2Start(t *testing.T, what string, args ...string) *h2Proc {
	t.Helper()
	p := &h2Proc{done: make(chan struct{})}
	p.cmd = exec.Command(os.Args[0], append([]string{"--log-format", "json"}, args...)...)
	p.cmd.Env = append(os.Environ(), "SLUICE_BE_MAIN=1")
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.err
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.cmd.Wait()
		p.code = p.cmd.ProcessState.ExitCode()
		close(p.done)
	}()
	t.Cleanup(func() {
		if !p.exited() {
			p.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-p.done:
			case <-time.After(15 * time.Second):
				p.cmd.Process.Kill()
				<-p.done
			}
		}
		if t.Failed() || os.Getenv("SLUICE_TEST_LOGS") != "" {
			t.Logf("%s (pid %d, exit %d):\n%s%s", what, p.cmd.Process.Pid, p.code, p.stdout.String(), p.err.String())
		}
	})
	return p
}

func (p *h2Proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// wait waits for the process to exit and returns its exit code.
func (p *h2Proc) wait(t *testing.T, d time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
		return p.code
	case <-time.After(d):
		t.Fatalf("process %v still running after %v", p.cmd.Args[3:], d)
		return 0
	}
}

// kill9 kills the process with SIGKILL and waits until it is gone.
func (p *h2Proc) kill9(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil && !p.exited() {
		t.Fatal(err)
	}
	<-p.done
}

// h2Certs makes a cluster CA with node certificates names in dir.
func h2Certs(t *testing.T, dir string, names ...string) {
	t.Helper()
	cmds := [][]string{{"cert", "ca", "--dir", dir}}
	for _, n := range names {
		cmds = append(cmds, []string{"cert", "node", "--dir", dir, "--name", n})
	}
	for _, args := range cmds {
		if code, _, errs := sluice(t, args...); code != 0 {
			t.Fatalf("%v: %s", args, errs)
		}
	}
}

// h2Admin calls a node's admin API.
func h2Admin(admin, method, path string, body, out any) error {
	return adminapi.NewClient(admin, "", nil).Call(context.Background(), method, path, body, out)
}

// h2Rejected reads sluice_gossip_rejected_total by reason from a node's /metrics.
func h2Rejected(t *testing.T, admin string) map[string]float64 {
	t.Helper()
	tok, err := adminapi.Token(admin, "")
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodGet, "http://"+admin+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/metrics: %d %s", resp.StatusCode, b)
	}
	out := map[string]float64{}
	for _, line := range strings.Split(string(b), "\n") {
		rest, ok := strings.CutPrefix(line, `sluice_gossip_rejected_total{reason="`)
		if !ok {
			continue
		}
		reason, val, _ := strings.Cut(rest, `"} `)
		v, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
		if err != nil {
			t.Fatalf("/metrics line %q: %v", line, err)
		}
		out[reason] = v
	}
	if len(out) == 0 {
		t.Fatalf("/metrics has no sluice_gossip_rejected_total:\n%s", b)
	}
	return out
}

// h2Count counts the live sstables of a table directory and the partitions they hold
// (Statistics.db's count, through `sluice sstable describe`); dot files are not sstables.
func h2Count(t *testing.T, dir string) (sstables int, partitions int64) {
	t.Helper()
	tocs, _ := filepath.Glob(filepath.Join(dir, "*-TOC.txt"))
	for _, toc := range tocs {
		if strings.HasPrefix(filepath.Base(toc), ".") {
			continue
		}
		code, out, errs := sluice(t, "sstable", "describe", "--json", strings.TrimSuffix(toc, "-TOC.txt"))
		var d struct {
			Partitions int64 `json:"partitions"`
		}
		if code != 0 || json.Unmarshal([]byte(out), &d) != nil {
			t.Fatalf("describe %s: exit %d: %s", toc, code, errs)
		}
		sstables++
		partitions += d.Partitions
	}
	return sstables, partitions
}

// ---- a cluster of two node processes, and the attacker ----

// h2Cluster is the key material of a cluster: its CA (node certificates n1 and n2), the gossip
// key, and another CA with the attacker's certificate "mallory".
type h2Cluster struct {
	dir, tlsDir, evilDir, keyFile string
	key                           []byte
}

func h2NewCluster(t *testing.T) *h2Cluster {
	t.Helper()
	dir := t.TempDir()
	c := &h2Cluster{dir: dir, tlsDir: filepath.Join(dir, "tls"), evilDir: filepath.Join(dir, "evil"), keyFile: filepath.Join(dir, "cluster.key")}
	h2Certs(t, c.tlsDir, "n1", "n2")
	h2Certs(t, c.evilDir, "mallory")
	c.key = make([]byte, 32)
	rand.Read(c.key)
	if err := os.WriteFile(c.keyFile, c.key, 0o600); err != nil {
		t.Fatal(err)
	}
	return c
}

// h2Node is one node process of an h2Cluster.
type h2Node struct {
	name, data, tableDir      string
	stream, admin, gossipAddr string
	p                         *h2Proc
}

// start starts node name holding partitions partitions of sluice.stress (the same ones on
// every node; none: an empty data directory), joining the seeds; like startVictim, with 4 tokens and sluice at SimpleStrategy
// RF 1 (the ownership keyspace).
func (c *h2Cluster) start(t *testing.T, name string, partitions int64, seeds ...string) *h2Node {
	t.Helper()
	n := &h2Node{name: name, data: filepath.Join(c.dir, name)}
	n.tableDir = gen.TableDir(n.data, "sluice", "stress")
	if err := os.MkdirAll(n.data, 0o755); err != nil {
		t.Fatal(err)
	}
	if partitions > 0 {
		ver, _ := version.ParseWritable("nb")
		res, err := gen.Generate(context.Background(), n.data, gen.Options{Version: ver, Partitions: partitions, PartitionSize: 4 << 10,
			RowSize: 1 << 10, Seed: 3, Keyspace: "sluice", Table: "stress"})
		if err != nil {
			t.Fatal(err)
		}
		n.tableDir = res.Desc.Dir
	}
	n.stream = fmt.Sprintf("127.0.0.1:%d", freePort(t))
	n.admin = fmt.Sprintf("127.0.0.1:%d", freePort(t))
	n.gossipAddr = fmt.Sprintf("127.0.0.1:%d", freePort(t))
	seedList := ""
	if len(seeds) > 0 {
		seedList = "seeds: [" + strings.Join(seeds, ", ") + "]\n"
	}
	cfg := fmt.Sprintf(`name: %s
data_dirs: [%s]
stream_addr: %s
admin_addr: %s
tls_dir: %s
gossip_addr: %s
%scluster_key_file: %s
num_tokens: 4
keyspaces:
  sluice: {class: SimpleStrategy, replication_factor: 1}
timeouts: {idle: 3s, keepalive: 1s, handshake: 3s}
`, name, n.data, n.stream, n.admin, c.tlsDir, n.gossipAddr, seedList, c.keyFile)
	cfgFile := filepath.Join(c.dir, name+".yaml")
	if err := os.WriteFile(cfgFile, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	n.p = h2Start(t, "node "+name, "run", "--config", cfgFile)
	waitFor(t, 20*time.Second, name+"'s ring", func() bool {
		var r adminapi.RingView
		return h2Admin(n.admin, http.MethodGet, "/v1/ring?load=false", nil, &r) == nil && r.State == "NORMAL"
	})
	return n
}

func (n *h2Node) ring(t *testing.T) adminapi.RingView {
	t.Helper()
	var r adminapi.RingView
	if err := h2Admin(n.admin, http.MethodGet, "/v1/ring?load=false", nil, &r); err != nil {
		t.Fatalf("%s: GET /v1/ring: %v", n.name, err)
	}
	return r
}

// h2Member finds name in a ring view.
func h2Member(r adminapi.RingView, name string) (adminapi.RingMember, bool) {
	for _, m := range r.Members {
		if m.Name == name {
			return m, true
		}
	}
	return adminapi.RingMember{}, false
}

// h2TokensOf lists the tokens a ring view gives name.
func h2TokensOf(r adminapi.RingView, name string) []int64 {
	var out []int64
	for _, tk := range r.Tokens {
		if tk.Node == name {
			out = append(out, tk.Token)
		}
	}
	return out
}

// h2Converged waits until every node's ring holds every node, proven, NORMAL and with its 4
// tokens.
func h2Converged(t *testing.T, nodes ...*h2Node) {
	t.Helper()
	waitFor(t, 30*time.Second, "the nodes to see each other's tokens", func() bool {
		for _, n := range nodes {
			var r adminapi.RingView
			if h2Admin(n.admin, http.MethodGet, "/v1/ring?load=false", nil, &r) != nil || r.Error != "" || len(r.Tokens) != 4*len(nodes) {
				return false
			}
			for _, o := range nodes {
				m, ok := h2Member(r, o.name)
				if !ok || m.Identity != "proven" || m.State != "NORMAL" || m.Tokens != 4 {
					return false
				}
			}
		}
		return true
	})
}

// h2Snapshot is what a ring view says about the cluster's proven members: their state,
// liveness, ownership and tokens (the attacker's own entry left out).
func h2Snapshot(r adminapi.RingView, names ...string) string {
	var b strings.Builder
	if r.Error != "" {
		fmt.Fprintf(&b, "error: %s\n", r.Error)
	}
	for _, name := range names {
		m, _ := h2Member(r, name)
		fmt.Fprintf(&b, "%s: %s %s identity=%s ownership=%.6g tokens=%d %v\n", name, m.State, m.Liveness, m.Identity, m.Ownership, m.Tokens, h2TokensOf(r, name))
	}
	return b.String()
}

// h2Attacker is a raw memberlist instance holding the gossip key and label and nothing of the
// cluster CA: it joins, announces a metadata claim of its own (signed with mallory's key, so
// its alive messages are taken), broadcasts its forged claims in every gossip round and hands
// them over in every push/pull exchange (LocalState), and records the metadata the members
// announce (through the event delegate, which memberlist calls under its lock).
type h2Attacker struct {
	ml   *memberlist.Memberlist
	mu   sync.Mutex
	meta []byte
	msgs [][]byte
	next int
	seen map[string][]byte // the members' metadata, by name
	sent int               // forged messages handed to gossip rounds
}

func (a *h2Attacker) NodeMeta(limit int) []byte { return a.meta }
func (a *h2Attacker) NotifyMsg([]byte)          {}

// GetBroadcasts hands out the forged claims round-robin, as many as fit, every round: the
// attacker does not care about retransmission limits.
func (a *h2Attacker) GetBroadcasts(overhead, limit int) [][]byte {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out [][]byte
	used := 0
	for range a.msgs {
		m := a.msgs[a.next%len(a.msgs)]
		if used+overhead+len(m) > limit {
			break
		}
		used += overhead + len(m)
		out = append(out, m)
		a.next++
	}
	a.sent += len(out)
	return out
}

// LocalState is the push/pull state of membership/gossip/wire.go: format 2, then each
// message length-prefixed.
func (a *h2Attacker) LocalState(join bool) []byte {
	a.mu.Lock()
	defer a.mu.Unlock()
	b := []byte{2}
	b = binary.AppendUvarint(b, uint64(len(a.msgs)))
	for _, m := range a.msgs {
		b = binary.AppendUvarint(b, uint64(len(m)))
		b = append(b, m...)
	}
	return b
}

func (a *h2Attacker) MergeRemoteState(buf []byte, join bool) {}

func (a *h2Attacker) NotifyJoin(n *memberlist.Node)   { a.record(n) }
func (a *h2Attacker) NotifyUpdate(n *memberlist.Node) { a.record(n) }
func (a *h2Attacker) NotifyLeave(n *memberlist.Node)  {}

func (a *h2Attacker) record(n *memberlist.Node) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.seen[n.Name] = bytes.Clone(n.Meta)
}

// tokensVersion is the TokensVersion of name's metadata as the attacker last heard it
// (payload: format:u8 state:u8 tokensVersion:uvarint ...).
func (a *h2Attacker) tokensVersion(name string) (uint64, bool) {
	a.mu.Lock()
	b := a.seen[name]
	a.mu.Unlock()
	c, err := claim.Decode(b)
	if err != nil || c.Kind != claim.KindMeta || len(c.Payload) < 3 {
		return 0, false
	}
	v, n := binary.Uvarint(c.Payload[2:])
	return v, n > 0
}

// h2MetaPayload encodes NodeMeta (membership/gossip/meta.go): format 1, state, tokens
// version, stream, admin, dc, rack.
func h2MetaPayload(state ring.NodeState, streamAddr string) []byte {
	b := []byte{1, byte(state)}
	b = binary.AppendUvarint(b, 0)
	for _, s := range []string{streamAddr, streamAddr, "dc1", "rack1"} {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	return b
}

// h2Attack joins the cluster at seeds as "mallory" and forges msgs from then on.
func h2Attack(t *testing.T, c *h2Cluster, msgs [][]byte, seeds ...string) *h2Attacker {
	t.Helper()
	// Its stream address serves the peer protocol with mallory's certificate, so the nodes'
	// proof of its identity fails at once (rather than after a 10 s timeout, during which
	// their rings wait for the proof).
	mallory := mustLoad(t, c.evilDir, "mallory")
	stc := mallory.ServerConfig()
	stc.NextProtos = []string{peerrpc.ALPN, wire.ALPN}
	stc.ClientAuth = tls.RequireAnyClientCert
	ln, err := quic.ListenAddr("127.0.0.1:0", stc, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept(context.Background())
			if err != nil {
				return
			}
			conn.CloseWithError(0, "")
		}
	}()
	meta, err := claim.Sign(mallory.Signer(), "sluice", claim.Claim{Kind: claim.KindMeta, Name: "mallory",
		Version: uint64(time.Now().UnixNano()), Payload: h2MetaPayload(ring.Normal, ln.Addr().String())})
	if err != nil {
		t.Fatal(err)
	}
	a := &h2Attacker{meta: meta, msgs: msgs, seen: map[string][]byte{}}
	mc := memberlist.DefaultLocalConfig()
	mc.Name = "mallory"
	mc.BindAddr, mc.BindPort, mc.AdvertisePort = "127.0.0.1", 0, 0
	mc.Label = "sluice" // internal/node's DefaultClusterLabel
	if mc.Keyring, err = memberlist.NewKeyring(nil, c.key); err != nil {
		t.Fatal(err)
	}
	mc.GossipVerifyIncoming, mc.GossipVerifyOutgoing = true, true
	mc.DelegateProtocolVersion, mc.DelegateProtocolMin, mc.DelegateProtocolMax = 1, 1, 1
	mc.GossipInterval = 50 * time.Millisecond
	mc.PushPullInterval = 500 * time.Millisecond
	mc.Delegate, mc.Events = a, a
	mc.LogOutput = io.Discard
	if a.ml, err = memberlist.Create(mc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.ml.Shutdown() })
	// A join is a push/pull with each seed: LocalState reaches them at once.
	if n, err := a.ml.Join(seeds); n != len(seeds) {
		t.Fatalf("the attacker joined %d of %v: %v", n, seeds, err)
	}
	return a
}

// h2Refused waits until every node has judged the attacker: its identity refused, so the
// ring leaves it out.
func h2Refused(t *testing.T, nodes ...*h2Node) {
	t.Helper()
	waitFor(t, 20*time.Second, "the nodes to refuse mallory's identity", func() bool {
		for _, n := range nodes {
			var r adminapi.RingView
			if h2Admin(n.admin, http.MethodGet, "/v1/ring?load=false", nil, &r) != nil {
				return false
			}
			if m, ok := h2Member(r, "mallory"); !ok || m.Identity != "refused" {
				return false
			}
		}
		return true
	})
}

// h2Forge is claim c unsigned, signed with mallory's key (a certificate of another CA) and
// signed with a fresh key: every envelope an attacker without the member's key can make.
func h2Forge(t *testing.T, c *h2Cluster, cl claim.Claim) [][]byte {
	t.Helper()
	fresh, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	out := [][]byte{cl.Encode()}
	for _, key := range []crypto.Signer{mustLoad(t, c.evilDir, "mallory").Signer(), fresh} {
		b, err := claim.Sign(key, "sluice", cl)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

// h2Chunk is a token chunk claim carrying a whole set: total offset n n×int64 big-endian.
func h2Chunk(name string, v uint64, tokens []int64) claim.Claim {
	p := binary.AppendUvarint(nil, uint64(len(tokens)))
	p = binary.AppendUvarint(p, 0)
	p = binary.AppendUvarint(p, uint64(len(tokens)))
	for _, tk := range tokens {
		p = binary.BigEndian.AppendUint64(p, uint64(tk))
	}
	return claim.Claim{Kind: claim.KindTokenChunk, Name: name, Version: v, Payload: p}
}

// h2Below is one token just below each of ts: a set that takes over nearly all of ts's
// ranges.
func h2Below(ts []int64) []int64 {
	var out []int64
	for _, v := range ts {
		if v != math.MinInt64 {
			out = append(out, v-1)
		}
	}
	slices.Sort(out)
	return out
}

// h2Cleanup runs `sluice cleanup sluice.stress` against a node and returns its outcome.
func h2Cleanup(t *testing.T, n *h2Node) adminapi.OpStatus {
	t.Helper()
	code, out, errs := sluice(t, "cleanup", "sluice.stress", "--admin", n.admin, "--json")
	var st adminapi.OpStatus
	if code != 0 || json.Unmarshal([]byte(out), &st) != nil {
		t.Fatalf("cleanup on %s: exit %d: %s %s", n.name, code, out, errs)
	}
	return st
}

// Findings 1, 3 and 4: token takeover, the version wrap, and cleanup with a forged ring. With
// only the gossip key (never a proven member), the attacker forged one token chunk in the name
// of proven member n2, at version 2^64-1 and at a plausible version (now, in nanoseconds), with
// a token just below each of n1's: n1 accepted it and its ownership fell from 0.50 to ~1e-18;
// n2's refutation wrapped its version to 0 and never won; and `sluice cleanup` on n1 then
// deleted every partition. Now every forged chunk, unsigned or signed with a key that is not
// n2's (mallory's certificate of another CA, a fresh key), and chunks in n1's own name at
// both versions (a set just below each of n2's tokens), are dropped and counted (sluice_gossip_rejected_total{reason} on both nodes); both
// rings stay as they were for 10 s, neither node's token version moves (no refutation, no
// wrap), and a cleanup on n1 keeps every sstable and partition it had.
func TestHostile2ForgedTokenChunksDoNotTakeOverTheRing(t *testing.T) {
	c := h2NewCluster(t)
	n1 := c.start(t, "n1", 200)
	// n2 holds the same partitions: owners confirm what they hold before a cleanup drops it,
	// and under the forged ring n2 would confirm everything, so only the refusal of the
	// forgery keeps n1's data.
	n2 := c.start(t, "n2", 200, n1.gossipAddr)
	h2Converged(t, n1, n2)

	// n1 first drops, legitimately, what lies in n2's ranges: from then on a cleanup on the
	// ring as it is keeps everything.
	st := h2Cleanup(t, n1)
	baseTables, baseParts := h2Count(t, n1.tableDir)
	t.Logf("baseline cleanup on n1: %d results, %d sstables, %d partitions left", len(st.Cleanup), baseTables, baseParts)

	r1, r2 := n1.ring(t), n2.ring(t)
	before1, before2 := h2Snapshot(r1, "n1", "n2"), h2Snapshot(r2, "n1", "n2")
	own1, _ := h2Member(r1, "n1")
	rej1, rej2 := h2Rejected(t, n1.admin), h2Rejected(t, n2.admin)

	now := uint64(time.Now().UnixNano())
	takeN1 := h2Below(h2TokensOf(r1, "n1")) // in n2's name: n2 would own nearly all of n1's ranges
	takeN2 := h2Below(h2TokensOf(r1, "n2")) // in n1's name: the same against n2
	var msgs [][]byte
	for _, cl := range []claim.Claim{
		h2Chunk("n2", math.MaxUint64, takeN1), h2Chunk("n2", now, takeN1),
		h2Chunk("n1", math.MaxUint64, takeN2), h2Chunk("n1", now, takeN2),
	} {
		msgs = append(msgs, h2Forge(t, c, cl)...)
	}
	a := h2Attack(t, c, msgs, n1.gossipAddr, n2.gossipAddr)
	h2Refused(t, n1, n2)
	var v1, v2 uint64
	waitFor(t, 10*time.Second, "the attacker to hear both nodes' metadata", func() bool {
		var ok1, ok2 bool
		v1, ok1 = a.tokensVersion("n1")
		v2, ok2 = a.tokensVersion("n2")
		return ok1 && ok2
	})

	// Ten seconds of forgeries (they flow from the join on), by broadcast and by push/pull
	// (the join, the attacker's own push/pull every 500 ms, and another join every 2 s).
	deadline := time.Now().Add(10 * time.Second)
	lastJoin := time.Now()
	for time.Now().Before(deadline) {
		if s := h2Snapshot(n1.ring(t), "n1", "n2"); s != before1 {
			t.Fatalf("n1's ring moved under the forgery:\nbefore\n%safter\n%s", before1, s)
		}
		if s := h2Snapshot(n2.ring(t), "n1", "n2"); s != before2 {
			t.Fatalf("n2's ring moved under the forgery:\nbefore\n%safter\n%s", before2, s)
		}
		if time.Since(lastJoin) > 2*time.Second {
			a.ml.Join([]string{n1.gossipAddr, n2.gossipAddr})
			lastJoin = time.Now()
		}
		time.Sleep(250 * time.Millisecond)
	}
	a.mu.Lock()
	sent := a.sent
	a.mu.Unlock()
	after1 := n1.ring(t)
	ownAfter, _ := h2Member(after1, "n1")
	t.Logf("n1's ownership %.6f before, %.6f after 10 s of forgeries (%d forged messages broadcast)", own1.Ownership, ownAfter.Ownership, sent)

	// Every forgery was seen and dropped, on both nodes.
	for _, x := range []struct {
		name   string
		before map[string]float64
		admin  string
	}{{"n1", rej1, n1.admin}, {"n2", rej2, n2.admin}} {
		now := h2Rejected(t, x.admin)
		t.Logf("%s: sluice_gossip_rejected_total before %v, after %v", x.name, x.before, now)
		for _, reason := range []string{"unsigned", "bad_signature", "version_ahead"} {
			if now[reason] <= x.before[reason] {
				t.Errorf("%s: sluice_gossip_rejected_total{reason=%q} stayed at %v", x.name, reason, now[reason])
			}
		}
	}

	// No refutation, no wrap: both token versions are what they were.
	w1, _ := a.tokensVersion("n1")
	w2, _ := a.tokensVersion("n2")
	t.Logf("tokens versions: n1 %d → %d, n2 %d → %d", v1, w1, v2, w2)
	if w1 != v1 || w2 != v2 || w1 == 0 || w2 == 0 {
		t.Errorf("token versions moved: n1 %d → %d, n2 %d → %d", v1, w1, v2, w2)
	}

	// A cleanup on n1 deletes nothing.
	st = h2Cleanup(t, n1)
	for _, r := range st.Cleanup {
		if r.Action != adminapi.CleanupKept || r.Kept != r.Partitions {
			t.Errorf("cleanup after the forgery: %s %s, kept %d of %d", filepath.Base(r.SSTable), r.Action, r.Kept, r.Partitions)
		}
	}
	tables, parts := h2Count(t, n1.tableDir)
	t.Logf("cleanup after the forgery: %d results; %d sstables, %d partitions (before: %d, %d)", len(st.Cleanup), tables, parts, baseTables, baseParts)
	if tables != baseTables || parts != baseParts {
		t.Errorf("n1 held %d sstables, %d partitions before the forgery and %d, %d after its cleanup", baseTables, baseParts, tables, parts)
	}
}

// Finding 2: a forged leave intent for n2 (unsigned, or signed with a key that is not n2's)
// made it a graceful leaver on n1, so that its crash then read as a departure (left) instead
// of a failure (dead). Now the intent is dropped and counted: n2
// stays a NORMAL owner in n1's ring while the forgery runs, and when n2 is then killed with
// SIGKILL n1 reports it dead (down, still NORMAL, its tokens still in the ring), not left,
// and keeps doing so while the attacker goes on.
func TestHostile2ForgedLeaveDoesNotMakeACrashALeave(t *testing.T) {
	c := h2NewCluster(t)
	n1 := c.start(t, "n1", 0)
	n2 := c.start(t, "n2", 0, n1.gossipAddr)
	h2Converged(t, n1, n2)
	n2Tokens := h2TokensOf(n1.ring(t), "n2")
	rej := h2Rejected(t, n1.admin)

	var msgs [][]byte
	for _, v := range []uint64{uint64(time.Now().UnixNano()), math.MaxUint64} {
		msgs = append(msgs, h2Forge(t, c, claim.Claim{Kind: claim.KindLeave, Name: "n2", Version: v})...)
	}
	a := h2Attack(t, c, msgs, n1.gossipAddr, n2.gossipAddr)
	h2Refused(t, n1, n2)
	// The intents flow by broadcast from the join on, and by push/pull at the join and the
	// attacker's own exchanges every 500 ms; once more by a join.
	waitFor(t, 10*time.Second, "the attacker's broadcasts", func() bool {
		a.mu.Lock()
		defer a.mu.Unlock()
		return a.sent >= 50
	})
	a.ml.Join([]string{n1.gossipAddr})
	time.Sleep(2 * time.Second)
	rejAfter := h2Rejected(t, n1.admin)
	t.Logf("n1: sluice_gossip_rejected_total before %v, after the forged leaves %v", rej, rejAfter)
	for _, reason := range []string{"unsigned", "bad_signature", "version_ahead"} {
		if rejAfter[reason] <= rej[reason] {
			t.Errorf("n1: sluice_gossip_rejected_total{reason=%q} stayed at %v", reason, rejAfter[reason])
		}
	}
	m, _ := h2Member(n1.ring(t), "n2")
	if m.State != "NORMAL" || m.Liveness != "alive" || !m.Up {
		t.Fatalf("n2 in n1's ring after the forged leave: %+v", m)
	}

	n2.p.kill9(t)
	killed := time.Now()
	waitFor(t, 45*time.Second, "n1 to notice n2's death", func() bool {
		m, _ = h2Member(n1.ring(t), "n2")
		return m.Liveness != "alive"
	})
	t.Logf("n1 noticed n2's SIGKILL after %v: liveness %s, state %s, up %v", time.Since(killed).Round(time.Millisecond), m.Liveness, m.State, m.Up)
	time.Sleep(3 * time.Second) // the attacker's leaves go on arriving
	r := n1.ring(t)
	m, _ = h2Member(r, "n2")
	if m.Liveness != "dead" || m.State != "NORMAL" || m.Up {
		t.Errorf("n2 after its SIGKILL, in n1's ring: liveness %q state %q up %v; want dead, NORMAL, down", m.Liveness, m.State, m.Up)
	}
	if got := h2TokensOf(r, "n2"); !slices.Equal(got, n2Tokens) {
		t.Errorf("n2's tokens in n1's ring after its SIGKILL: %v, want %v", got, n2Tokens)
	}
}

// ---- a stream server, and receivers killed with SIGKILL ----

// h2Server is a `sluice run` node process without membership serving sluice.stress: n
// uncompressed sstables of about size bytes each (so the bytes on disk are what is streamed),
// with the default idle timeout (60 s).
type h2Server struct {
	tlsDir, tableDir, stream, admin string
	sstables                        int
	partitions                      int64
	p                               *h2Proc
}

func h2StartServer(t *testing.T, n int, size int64) *h2Server {
	t.Helper()
	dir := t.TempDir()
	s := &h2Server{tlsDir: filepath.Join(dir, "tls"), sstables: n}
	h2Certs(t, s.tlsDir, "n1", "peer")
	data := filepath.Join(dir, "data")
	ver, _ := version.ParseWritable("nb")
	for i := range n {
		res, err := gen.Generate(context.Background(), data, gen.Options{Version: ver, Size: size, PartitionSize: 64 << 10,
			RowSize: 4 << 10, Compression: "none", Seed: uint64(i + 1), Keyspace: "sluice", Table: "stress"})
		if err != nil {
			t.Fatal(err)
		}
		s.tableDir = res.Desc.Dir
		s.partitions += res.Partitions
	}
	s.stream = fmt.Sprintf("127.0.0.1:%d", freePort(t))
	s.admin = fmt.Sprintf("127.0.0.1:%d", freePort(t))
	cfg := fmt.Sprintf("name: n1\ndata_dirs: [%s]\nstream_addr: %s\nadmin_addr: %s\ntls_dir: %s\n", data, s.stream, s.admin, s.tlsDir)
	cfgFile := filepath.Join(dir, "sluice.yaml")
	if err := os.WriteFile(cfgFile, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	s.p = h2Start(t, "server", "run", "--config", cfgFile)
	waitFor(t, 15*time.Second, "the server's admin API", func() bool {
		var st struct{}
		return h2Admin(s.admin, http.MethodGet, "/v1/status", nil, &st) == nil
	})
	return s
}

// h2FullRing is every token: each sstable arrives whole.
const h2FullRing = "(-9223372036854775808,9223372036854775807]"

// fetch starts `sluice stream fetch` of the whole ring into out as certificate "peer".
func (s *h2Server) fetch(t *testing.T, out string, resume bool) *h2Proc {
	t.Helper()
	args := []string{"stream", "fetch", "--peer", s.stream, "--keyspace", "sluice", "--table", "stress",
		"--ranges", h2FullRing, "--out", out, "--tls-dir", s.tlsDir, "--name", "peer", "--json"}
	if resume {
		args = append(args, "--resume")
	}
	return h2Start(t, "fetch into "+out, args...)
}

// out is a new target table directory for a fetch of s's table.
func (s *h2Server) out(t *testing.T) string {
	return filepath.Join(t.TempDir(), "sluice", filepath.Base(s.tableDir))
}

// h2Leftovers lists the files of dir whose names start with one of prefixes.
func h2Leftovers(dir string, prefixes ...string) []string {
	ents, _ := os.ReadDir(dir)
	var out []string
	for _, e := range ents {
		for _, p := range prefixes {
			if strings.HasPrefix(e.Name(), p) {
				out = append(out, e.Name())
				break
			}
		}
	}
	return out
}

// h2WaitFetch waits until cond holds of the fetch p into out: of how many sstables are
// installed there and of the sizes of the Data.db temporaries its installs are writing (not
// those in old, what an earlier process left). It fails the test if the fetch ends first.
func h2WaitFetch(t *testing.T, p *h2Proc, out string, old []string, within time.Duration, what string, cond func(installed int, tmpData []int64) bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		if p.exited() {
			t.Fatalf("the fetch ended (exit %d) before %s: %s", p.code, what, p.err.String())
		}
		ents, _ := os.ReadDir(out)
		installed, tmpData := 0, []int64{}
		for _, e := range ents {
			name := e.Name()
			switch {
			case strings.HasSuffix(name, "-TOC.txt") && !strings.HasPrefix(name, "."):
				installed++
			case strings.HasPrefix(name, ".sluice-tmp-") && strings.HasSuffix(name, "-Data.db") && !slices.Contains(old, name):
				if fi, err := e.Info(); err == nil {
					tmpData = append(tmpData, fi.Size())
				}
			}
		}
		if cond(installed, tmpData) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s within %v (%d installed, temporaries %v)", what, within, installed, tmpData)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// h2Receiving waits until the fetch p into out is receiving an sstable: one of its Data.db
// temporaries (not in old) holds at least minBytes.
func h2Receiving(t *testing.T, p *h2Proc, out string, minBytes int64, within time.Duration, old []string) {
	t.Helper()
	h2WaitFetch(t, p, out, old, within, fmt.Sprintf("a Data.db temporary of %d bytes", minBytes), func(_ int, tmp []int64) bool {
		return slices.ContainsFunc(tmp, func(n int64) bool { return n >= minBytes })
	})
}

// h2Done checks that a fetch into out completed: exit 0, every sstable and partition of the
// server once, and no temporary, lock, kept part or scratch file left.
func h2Done(t *testing.T, s *h2Server, p *h2Proc, out, what string) {
	t.Helper()
	if code := p.wait(t, 60*time.Second); code != 0 {
		t.Fatalf("%s: exit %d: %s", what, code, p.err.String())
	}
	if n, parts := h2Count(t, out); n != s.sstables || parts != s.partitions {
		t.Errorf("%s: %d sstables, %d partitions in %s; the server holds %d, %d", what, n, parts, out, s.sstables, s.partitions)
	}
	if left := h2Leftovers(out, ".sluice-tmp-", ".sluice-part-", ".sluice-rows-"); len(left) > 0 {
		t.Errorf("%s: left in %s: %v", what, out, left)
	}
}

// Finding 5: a receiver killed with SIGKILL three times mid-fetch, then resumed to the end,
// left `.sluice-tmp-*` files (and their locks) in the target directory for good: nothing
// removed the temporaries of a dead install. Now each --resume removes what the killed
// installs left (their owner locks are released with the process), the fetch completes with
// every sstable and partition once, and no temporary or lock remains, also after another
// --resume.
func TestHostile2KilledFetchesLeaveNoTemporaries(t *testing.T) {
	// 7 × 12 MiB: the receiver commits its first batch once 64 MiB are sealed (stream/commit.go),
	// so the kills can come before, while sstables wait for it, and after it.
	s := h2StartServer(t, 7, 12<<20)
	out := s.out(t)
	p := s.fetch(t, out, false)
	var left []string
	for i, k := range []struct {
		what string
		cond func(installed int, tmp []int64) bool
	}{
		{"the first sstable half received", func(n int, tmp []int64) bool {
			return n == 0 && slices.ContainsFunc(tmp, func(b int64) bool { return b >= 6<<20 })
		}},
		{"received sstables waiting for their commit", func(n int, tmp []int64) bool { return n == 0 && len(tmp) >= 3 }},
		{"the first batch's commit begun (or done) and the last sstable on its way", func(n int, tmp []int64) bool {
			return n > 0 && n < s.sstables && slices.ContainsFunc(tmp, func(b int64) bool { return b >= 1<<20 })
		}},
	} {
		h2WaitFetch(t, p, out, left, 30*time.Second, k.what, k.cond)
		p.kill9(t)
		left = h2Leftovers(out, ".sluice-tmp-")
		n, _ := h2Count(t, out)
		t.Logf("SIGKILL %d (%s): %d sstables installed, %d .sluice-tmp-* files left: %v", i+1, k.what, n, len(left), left)
		if len(left) == 0 {
			t.Errorf("SIGKILL %d left no temporary: the kill was not mid-install", i+1)
		}
		p = s.fetch(t, out, true)
	}
	h2Done(t, s, p, out, "the resume after three kills")
	var rep fetchReport
	json.Unmarshal([]byte(p.stdout.String()), &rep)
	t.Logf("the last resume: %d fetched, %d skipped; stderr: %s", len(rep.SSTables), len(rep.Skipped), strings.TrimSpace(p.err.String()))

	again := s.fetch(t, out, true)
	h2Done(t, s, again, out, "another --resume")
	rep = fetchReport{}
	if err := json.Unmarshal([]byte(again.stdout.String()), &rep); err != nil || len(rep.SSTables) != 0 || len(rep.Skipped) != s.sstables {
		t.Errorf("another --resume: %d fetched, %d skipped (%v); want 0 and %d", len(rep.SSTables), len(rep.Skipped), err, s.sstables)
	}
}

// Finding 6: a resume record planted (or edited) in target directory B whose entries name
// sstables of another directory (`../A/...`, or an absolute path) made a --resume into B skip
// them: B ended without them, and exit 0. Now such entries are ignored with a warning on
// stderr: B ends with every sstable. The record is a genuine one, taken from a fetch into A
// killed with SIGKILL after its first installs (and, completed, from its end), with its
// entries and kept part pointed at A.
func TestHostile2ResumeRecordCannotPointOutsideItsDirectory(t *testing.T) {
	s := h2StartServer(t, 7, 12<<20) // two commit batches, as in the test above
	root := t.TempDir()
	a := filepath.Join(root, "a", "sluice", filepath.Base(s.tableDir))
	p := s.fetch(t, a, false)
	h2WaitFetch(t, p, a, nil, 30*time.Second, "the first batch installed into A", func(n int, tmp []int64) bool {
		return n > 0 && n < s.sstables && slices.ContainsFunc(tmp, func(b int64) bool { return b >= 1<<20 })
	})
	p.kill9(t)
	records, _ := filepath.Glob(filepath.Join(a, ".sluice-fetch-*.json"))
	if len(records) != 1 {
		t.Fatalf("resume records in A after the kill: %v", records)
	}
	killed, err := os.ReadFile(records[0])
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("A's record after the kill: %s", killed)
	h2Done(t, s, s.fetch(t, a, true), a, "the resume into A")
	complete, err := os.ReadFile(records[0])
	if err != nil {
		t.Fatal(err)
	}

	for i, rec := range [][]byte{killed, complete} {
		var st map[string]any
		if err := json.Unmarshal(rec, &st); err != nil {
			t.Fatal(err)
		}
		installed, _ := st["installed"].(map[string]any)
		if len(installed) == 0 {
			t.Fatalf("record %d names no installed sstable: %s", i, rec)
		}
		b := filepath.Join(root, fmt.Sprintf("b%d", i), "sluice", filepath.Base(s.tableDir))
		if err := os.MkdirAll(b, 0o755); err != nil {
			t.Fatal(err)
		}
		j := 0
		for id, toc := range installed {
			if j%2 == 0 {
				installed[id] = filepath.Join("..", "..", "..", "a", "sluice", filepath.Base(a), toc.(string))
			} else {
				installed[id] = filepath.Join(a, toc.(string))
			}
			j++
		}
		if part, ok := st["partial"].(map[string]any); ok {
			part["path"] = filepath.Join("..", "..", "..", "a", "sluice", filepath.Base(a), part["path"].(string))
		}
		planted, _ := json.Marshal(st)
		if err := os.WriteFile(filepath.Join(b, filepath.Base(records[0])), planted, 0o644); err != nil {
			t.Fatal(err)
		}
		q := s.fetch(t, b, true)
		h2Done(t, s, q, b, fmt.Sprintf("the resume into B%d", i))
		var rep fetchReport
		json.Unmarshal([]byte(q.stdout.String()), &rep)
		warned := strings.Count(q.err.String(), "warning: resume record")
		t.Logf("B%d (%d planted entries): %d fetched, %d skipped, %d warnings", i, len(installed), len(rep.SSTables), len(rep.Skipped), warned)
		if len(rep.Skipped) != 0 || len(rep.SSTables) != s.sstables {
			t.Errorf("B%d: %d fetched, %d skipped; want %d and none", i, len(rep.SSTables), len(rep.Skipped), s.sstables)
		}
		if warned != len(installed) || !strings.Contains(q.err.String(), "ignored") {
			t.Errorf("B%d: %d warnings about %d planted entries on stderr: %s", i, warned, len(installed), q.err.String())
		}
	}
}

// Finding 7: a receiver killed with SIGKILL and resumed at once was refused ("already holds 2
// sessions (the per-peer limit)") until the server's idle timeout (60 s by default) ended the
// dead sessions. Now a session of the same request supersedes the oldest dead one at once:
// three times in a row, a --resume started right after the kill is admitted and receives
// within 2 s, with the dead sessions still within the idle timeout, and the last one
// completes.
func TestHostile2ResumeRightAfterKillIsAdmitted(t *testing.T) {
	s := h2StartServer(t, 4, 20<<20)
	out := s.out(t)
	p := s.fetch(t, out, false)
	h2Receiving(t, p, out, 1<<20, 30*time.Second, nil)
	start := time.Now()
	for i := 1; i <= 3; i++ {
		p.kill9(t)
		killed := time.Now()
		left := h2Leftovers(out, ".sluice-tmp-")
		var sessions adminapi.StreamsResponse
		if err := h2Admin(s.admin, http.MethodGet, "/v1/streams", nil, &sessions); err != nil {
			t.Fatal(err)
		}
		open := 0
		for _, ss := range sessions.Sessions {
			if ss.State != "complete" && ss.State != "failed" {
				open++
			}
		}
		if i > 1 && open < 2 {
			t.Errorf("SIGKILL %d: %d sessions open on the server; the dead ones should hold both per-peer slots", i, open)
		}
		p = s.fetch(t, out, true)
		// Admitted: it receives, into temporaries of its own, within 2 s of the kill.
		h2Receiving(t, p, out, 1, 2*time.Second, left)
		t.Logf("SIGKILL %d: %d sessions still open on the server; the resume was receiving %v after the kill", i, open, time.Since(killed).Round(time.Millisecond))
		if strings.Contains(p.err.String(), "per-peer") {
			t.Fatalf("resume %d refused: %s", i, p.err.String())
		}
		if i < 3 {
			h2Receiving(t, p, out, 1<<20, 30*time.Second, left)
		}
	}
	h2Done(t, s, p, out, "the last resume")
	if took := time.Since(start); took > 50*time.Second {
		t.Errorf("three kills and resumes took %v: the idle timeout, not the supersede, let them in", took)
	}
}

// Finding 8: `sluice sstable split --ways N` allocated N pieces before looking at the parent:
// --ways 9223372036854775807 crashed the process and --ways 4000000000 ate the host's memory.
// Now both are usage errors (exit 2) naming the bound, and nothing is written.
func TestHostile2SplitWaysIsBounded(t *testing.T) {
	dir := t.TempDir()
	ver, _ := version.ParseWritable("nb")
	res, err := gen.Generate(context.Background(), filepath.Join(dir, "data"), gen.Options{Version: ver, Partitions: 50, PartitionSize: 2 << 10,
		RowSize: 512, Seed: 5, Keyspace: "sluice", Table: "stress"})
	if err != nil {
		t.Fatal(err)
	}
	for _, ways := range []string{"9223372036854775807", "4000000000"} {
		out := filepath.Join(dir, "kids-"+ways)
		p := h2Start(t, "split --ways "+ways, "sstable", "split", res.Desc.Path("Data.db"), "--out", out, "--ways", ways)
		code := p.wait(t, 30*time.Second)
		errs := p.err.String()
		t.Logf("--ways %s: exit %d: %s", ways, code, strings.TrimSpace(errs))
		if code != 2 || !strings.Contains(errs, strconv.Itoa(maxWays)) {
			t.Errorf("--ways %s: exit %d, %q; want 2 naming the bound %d", ways, code, errs, maxWays)
		}
		if ents, err := os.ReadDir(out); err == nil && len(ents) > 0 {
			t.Errorf("--ways %s wrote %d files into --out", ways, len(ents))
		}
	}
}
