package stream

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/sluicedb/sluice/internal/testkit/sstabletest"
	"github.com/sluicedb/sluice/sstable"
	"github.com/sluicedb/sluice/sstable/descriptor"
	"github.com/sluicedb/sluice/sstable/gen"
	"github.com/sluicedb/sluice/sstable/token"
	"github.com/sluicedb/sluice/sstable/version"
)

// testCA is a throwaway cluster CA issuing leaf certificates for 127.0.0.1.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
}

func newTestCA(t testing.TB) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true,
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &testCA{cert: cert, key: key, pool: pool}
}

func (ca *testCA) leaf(t testing.TB, name string) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

func (ca *testCA) server(t testing.TB) *tls.Config {
	return &tls.Config{Certificates: []tls.Certificate{ca.leaf(t, "server")}, ClientAuth: tls.RequireAndVerifyClientCert,
		ClientCAs: ca.pool, MinVersion: tls.VersionTLS13}
}

func (ca *testCA) client(t testing.TB, trust *testCA) *tls.Config {
	return &tls.Config{Certificates: []tls.Certificate{ca.leaf(t, "sluice")}, RootCAs: trust.pool, MinVersion: tls.VersionTLS13}
}

// dirCatalog serves the tables under a gen root.
type dirCatalog struct{ root string }

func (c dirCatalog) Hold(keyspace, table string) ([]descriptor.Descriptor, func(), error) {
	ds, err := descriptor.List(gen.TableDir(c.root, keyspace, table))
	if err != nil {
		return nil, nil, err
	}
	return ds, func() {}, nil
}

// testServer runs a Server on 127.0.0.1:0 until the test ends.
func testServer(t testing.TB, cfg Config, cat Catalog, tc *tls.Config) (*Server, string) {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := NewServer(cfg, cat, tc, zerolog.Nop())
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		srv.Serve(ctx, pc)
	}()
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		pc.Close()
	})
	return srv, pc.LocalAddr().String()
}

type genSpec struct {
	version     string
	compression string
	seeds       []uint64
	partitions  int64
}

// genTable writes one sstable per seed into gen.TableDir(root, "ks", table).
func genTable(t testing.TB, root, table string, s genSpec) []string {
	t.Helper()
	v, err := version.ParseWritable(s.version)
	if err != nil {
		t.Fatal(err)
	}
	n := s.partitions
	if n == 0 {
		n = 150
	}
	var prefixes []string
	for _, seed := range s.seeds {
		res, err := gen.Generate(context.Background(), root, gen.Options{Version: v, Partitions: n, PartitionSize: 4 << 10,
			RowSize: 512, IndexBlockSize: 1 << 10, Compression: s.compression, ChunkLength: 4 << 10, Seed: seed,
			Keyspace: "ks", Table: table})
		if err != nil {
			t.Fatal(err)
		}
		prefixes = append(prefixes, res.Desc.Prefix())
	}
	return prefixes
}

type partition = sstabletest.Partition

func readAll(t testing.TB, prefix string) []partition { return sstabletest.ReadAll(t, prefix) }

// checkFetched checks the contract of a fetch: every fetched sstable verifies (extended),
// and together they hold exactly the parents' partitions in ranges, byte for byte, once.
func checkFetched(t testing.TB, parents []string, ranges token.RangeSet, res *FetchResult) {
	t.Helper()
	checkFetchedVia(t, parents, parents, ranges, res)
}

// checkFetchedVia is checkFetched of a fetch from senders, sstables that hold the parents'
// partitions (a chain: a node that fetched them before): what a sequential reader makes of
// the result depends on the senders' files.
func checkFetchedVia(t testing.TB, parents, senders []string, ranges token.RangeSet, res *FetchResult) {
	t.Helper()
	checkOnePerParent(t, res)
	checkFetchedPartitions(t, parents, senders, ranges, res)
}

// checkOnePerParent checks that one session installed at most one sstable per parent sstable
// (entire, or one multi-run partial).
func checkOnePerParent(t testing.TB, res *FetchResult) {
	t.Helper()
	perParent := map[string]int{}
	for _, f := range res.SSTables {
		parent, _, _ := strings.Cut(f.SSTable, "@")
		if perParent[parent]++; perParent[parent] > 1 {
			t.Errorf("fetched %d sstables of parent %s; a session installs at most one per parent", perParent[parent], parent)
		}
	}
}

// checkFetchedPartitions checks that the fetched sstables verify (extended) and together hold
// exactly the parents' partitions in ranges, each once.
func checkFetchedPartitions(t testing.TB, parents, senders []string, ranges token.RangeSet, res *FetchResult) {
	t.Helper()
	want := map[string][]byte{}
	for _, p := range parents {
		for _, pt := range readAll(t, p) {
			if ranges.Contains(pt.Token) {
				want[string(pt.Key)] = pt.Bytes
			}
		}
	}
	got := map[string]bool{}
	parentsScannable := allScannable(t, senders)
	for _, f := range res.SSTables {
		rep, err := sstable.Verify(f.Path, sstable.VerifyOptions{Extended: true})
		if err != nil {
			t.Fatalf("verify %s: %v", f.Path, err)
		}
		for _, p := range rep.Problems {
			t.Errorf("fetched %s (%s): %s", f.Path, f.Kind, p)
		}
		n := 0
		parts := readAll(t, f.Path)
		checkScannable(t, f, parts, parentsScannable)
		for _, pt := range parts {
			w, ok := want[string(pt.Key)]
			if !ok || string(w) != string(pt.Bytes) {
				t.Errorf("fetched %s: partition %x is not the parent's in the ranges", f.Path, pt.Key)
			}
			if got[string(pt.Key)] {
				t.Errorf("fetched %s: partition %x twice", f.Path, pt.Key)
			}
			got[string(pt.Key)] = true
			n++
		}
		if int64(n) != f.Partitions {
			t.Errorf("fetched %s: %d partitions, result says %d", f.Path, n, f.Partitions)
		}
	}
	if len(got) != len(want) {
		t.Errorf("fetched %d partitions, want %d", len(got), len(want))
	}
}

// checkScannable holds a fetched sstable to the rule that every byte of a partial's or rows
// sstable's data belongs to a partition its index addresses, so that a scan from position 0
// finds exactly its index's partitions (fillers empty) and verify agrees; an entire copy is its
// sender's file, and a parent with dead regions of its own inside a run passes them on.
func checkScannable(t testing.TB, f Fetched, parts []partition, parentsScannable bool) {
	t.Helper()
	if f.Kind == "entire" || !parentsScannable {
		return
	}
	if err := sstabletest.CheckScannable(f.Path, sstabletest.Keys(parts)); err != nil {
		t.Errorf("fetched %s (%s) is not what its index says to a sequential reader: %v", f.Path, f.Kind, err)
	}
}

// allScannable says whether verify finds every sstable scannable (no dead region a
// sequential reader would trip on).
func allScannable(t testing.TB, prefixes []string) bool {
	t.Helper()
	for _, p := range prefixes {
		rep, err := sstable.Verify(p, sstable.VerifyOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !rep.Scannable {
			return false
		}
	}
	return true
}
