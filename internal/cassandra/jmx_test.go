package cassandra

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicedb/sluice/internal/catalog"
	"github.com/sluicedb/sluice/sstable/descriptor"
)

// TestMain lets the test binary stand in for the Java JMX client: started with SLUICE_FAKE_JMX
// set, it speaks SluiceJMX's protocol (see fakeJMX) instead of running the tests.
func TestMain(m *testing.M) {
	if mode := os.Getenv("SLUICE_FAKE_JMX"); mode != "" {
		os.Exit(fakeJMX(mode))
	}
	os.Exit(m.Run())
}

// fakeJMX is SluiceJMX as the node's behaviour mode makes it answer: ok (moves every sstable of
// the request's directory into SLUICE_FAKE_JMX_LIVE under a new generation, as Cassandra's
// importer does, and answers no failed directory), once (ok, then exits, as a client whose
// connection dropped between calls), ignore (answers success, moves nothing), faildir (lists the
// directory as failed), throw (the call threw), die (exits during the call), refuse (cannot
// connect). It appends what it was started with and every call to SLUICE_FAKE_JMX_LOG.
func fakeJMX(mode string) int {
	logf, err := os.OpenFile(os.Getenv("SLUICE_FAKE_JMX_LOG"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return 9
	}
	defer logf.Close()
	args := os.Args[1:]
	class := "missing"
	if len(args) >= 3 && args[0] == "-cp" {
		if b, err := os.ReadFile(filepath.Join(args[1], args[2]+".class")); err == nil && bytes.Equal(b, jmxClass) {
			class = "ok"
		}
	}
	fmt.Fprintf(logf, "start args=%s class=%s user=%s password=%s\n", strings.Join(args, " "), class,
		os.Getenv("SLUICE_JMX_USERNAME"), os.Getenv("SLUICE_JMX_PASSWORD"))
	if mode == "refuse" {
		fmt.Println(`{"fatal":"connecting to ` + args[len(args)-1] + `: java.net.ConnectException: Connection refused"}`)
		return 1
	}
	fmt.Println("Picked up JAVA_TOOL_OPTIONS: noise a JVM prints")
	fmt.Println(`{"ready":true}`)
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	if mode == "pair" {
		// Two calls in flight at once, answered in reverse order; a client that waits for
		// each answer before sending the next request gets an error instead.
		first := <-lines
		id1 := strings.Split(first, " ")[1]
		select {
		case second := <-lines:
			fmt.Printf(`{"id":%s,"failed":[],"millis":2}`+"\n", strings.Split(second, " ")[1])
			fmt.Printf(`{"id":%s,"failed":[],"millis":1}`+"\n", id1)
		case <-time.After(10 * time.Second):
			fmt.Printf(`{"id":%s,"error":"only one call in flight"}`+"\n", id1)
			for line := range lines {
				fmt.Printf(`{"id":%s,"error":"only one call in flight"}`+"\n", strings.Split(line, " ")[1])
			}
		}
		for range lines {
		}
		return 0
	}
	for line := range lines {
		f := strings.Split(line, " ")
		for i := range f {
			f[i], _ = url.QueryUnescape(f[i])
		}
		fmt.Fprintf(logf, "call %s\n", strings.Join(f, " "))
		id, dir := f[1], f[4]
		switch mode {
		case "die":
			return 3
		case "throw":
			fmt.Printf(`{"id":%s,"error":"javax.management.RuntimeMBeanException <- java.lang.RuntimeException: Can't import sstable"}`+"\n", id)
			continue
		case "faildir":
			fmt.Printf(`{"id":%s,"failed":[%q],"millis":3}`+"\n", id, dir)
			continue
		case "ignore":
			fmt.Printf(`{"id":%s,"failed":[],"millis":3}`+"\n", id)
			continue
		}
		live, err := catalog.ListLive(dir)
		if err != nil {
			fmt.Printf(`{"id":%s,"error":%q}`+"\n", id, err.Error())
			continue
		}
		// Fresh generations after those the live directory holds, as Cassandra's importer picks.
		held, _ := catalog.ListLive(os.Getenv("SLUICE_FAKE_JMX_LIVE"))
		for i, s := range live {
			nd := descriptor.Descriptor{Dir: os.Getenv("SLUICE_FAKE_JMX_LIVE"), Version: s.Desc.Version, ID: fmt.Sprint(200 + len(held) + i)}
			for _, c := range s.Comps {
				if err := os.Rename(s.Desc.Path(c), nd.Path(c)); err != nil {
					return 8
				}
			}
		}
		fmt.Printf(`{"id":%s,"failed":[],"millis":3}`+"\n", id)
		if mode == "once" {
			return 0
		}
	}
	return 0
}

// jmxFixture is an importFixture whose Importer imports through a JMX client played by fakeJMX.
type jmxFixture struct {
	*importFixture
	log string
}

func newJMXFixture(t *testing.T, n int, mode string) *jmxFixture {
	t.Helper()
	f := &jmxFixture{importFixture: newImportFixture(t, n), log: filepath.Join(t.TempDir(), "jmx.log")}
	t.Setenv("SLUICE_FAKE_JMX", mode)
	t.Setenv("SLUICE_FAKE_JMX_LIVE", f.live)
	t.Setenv("SLUICE_FAKE_JMX_LOG", f.log)
	f.im.Run = func(context.Context, []string) (string, int, error) {
		t.Error("nodetool ran although the JMX client is configured")
		return "", 1, errors.New("not expected")
	}
	pw := filepath.Join(t.TempDir(), "jmx.password")
	if err := os.WriteFile(pw, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f.im.JMX = &JMX{Address: "127.0.0.1:7199", Username: "cassandra", PasswordFile: pw, Java: []string{os.Args[0]}, StartTimeout: 20 * time.Second}
	t.Cleanup(func() {
		if err := f.im.JMX.Close(); err != nil {
			t.Error(err)
		}
	})
	return f
}

// logLines are the fake's log lines starting with prefix.
func (f *jmxFixture) logLines(t *testing.T, prefix string) []string {
	t.Helper()
	b, err := os.ReadFile(f.log)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return out
}

// Two imports through one client process: the embedded class is written for it, the service
// URL is nodetool's, the credentials come in its environment (never on its command line), and
// each call passes SidecarImportFlags. The Importer still confirms on disk and empties staging.
func TestJMXImportsThroughOneProcess(t *testing.T) {
	f := newJMXFixture(t, 2, "ok")
	res, err := f.im.Import(context.Background(), f.req())
	if err != nil {
		t.Fatal(err)
	}
	if len(res.SSTables) != 2 || countLive(t, f.live) != 2 || countLive(t, f.src) != 0 {
		t.Fatalf("imported %d, live %d, source %d", len(res.SSTables), countLive(t, f.live), countLive(t, f.src))
	}
	stagingEmpty(t, f.importFixture)

	g := newImportFixture(t, 1) // a second batch, imported through the same client
	if _, err := f.im.Import(context.Background(), ImportRequest{Keyspace: "ks", Table: "t", TableID: testTableID, Dir: g.src}); err != nil {
		t.Fatal(err)
	}
	if countLive(t, f.live) != 3 {
		t.Errorf("live %d after the second import, want 3", countLive(t, f.live))
	}
	if n := f.im.JMX.Starts(); n != 1 {
		t.Errorf("%d client processes for two imports, want 1", n)
	}
	starts := f.logLines(t, "start ")
	if len(starts) != 1 {
		t.Fatalf("starts %q", starts)
	}
	s := starts[0]
	if !strings.Contains(s, " SluiceJMX service:jmx:rmi:///jndi/rmi://127.0.0.1:7199/jmxrmi ") || !strings.Contains(s, "class=ok") ||
		!strings.Contains(s, "user=cassandra password=s3cret") || strings.Contains(strings.SplitN(s, " class=", 2)[0], "s3cret") {
		t.Errorf("started as %q", s)
	}
	calls := f.logLines(t, "call ")
	if len(calls) != 2 {
		t.Fatalf("calls %q", calls)
	}
	fields := strings.Fields(calls[0])
	if fields[1] != "import" || fields[3] != "ks" || fields[4] != "t" || !strings.HasSuffix(fields[5], filepath.Join("ks", "t-"+testTableID)) ||
		strings.Join(fields[6:], " ") != "true true false true true false false" {
		t.Errorf("call %q: want import ID ks t STAGING/ks/t-ID and the flags reset_level clear_repaired !verify_sstables verify_tokens invalidate_caches !extended !copy", calls[0])
	}
}

// The client exits between calls (a dropped connection): the next import starts another.
func TestJMXRestartsADeadClient(t *testing.T) {
	f := newJMXFixture(t, 1, "once")
	if _, err := f.im.Import(context.Background(), f.req()); err != nil {
		t.Fatal(err)
	}
	g := newImportFixture(t, 1)
	deadline := time.Now().Add(10 * time.Second)
	for f.im.JMX.p != nil && !f.im.JMX.p.dead() && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := f.im.Import(context.Background(), ImportRequest{Keyspace: "ks", Table: "t", TableID: testTableID, Dir: g.src}); err != nil {
		t.Fatal(err)
	}
	if n := f.im.JMX.Starts(); n != 2 {
		t.Errorf("%d client starts, want 2 (the first exited after its call)", n)
	}
	if countLive(t, f.live) != 2 {
		t.Errorf("live %d, want 2", countLive(t, f.live))
	}
}

// What each answer makes of the import: a refusal, a thrown call and a failed directory give
// the sstables back to the source; a success that moved nothing is not believed; a client that
// dies during the call leaves them staged (Cassandra may still be importing) and the error
// says so.
func TestJMXFailures(t *testing.T) {
	for _, tc := range []struct {
		mode, want string
		is         error
		back       bool // the sstables are back in the source
	}{
		{"refuse", "Connection refused", ErrJMX, true},
		{"throw", "Can't import sstable", ErrJMX, true},
		{"faildir", "failed to import", ErrJMX, true},
		{"ignore", "still in the staging directory", ErrNotConfirmed, true},
		{"die", "outcome is unknown", ErrOutcomeUnknown, false},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			f := newJMXFixture(t, 2, tc.mode)
			_, err := f.im.Import(context.Background(), f.req())
			var ie *ImportError
			if !errors.Is(err, tc.is) || !errors.As(err, &ie) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want %v mentioning %q, got %v", tc.is, tc.want, err)
			}
			if got := countLive(t, f.src); (got == 2) != tc.back {
				t.Errorf("the source holds %d sstables after the failure", got)
			}
			if countLive(t, f.live) != 0 {
				t.Errorf("the live directory holds %d sstables", countLive(t, f.live))
			}
			if !tc.back {
				if !strings.Contains(err.Error(), ie.Dir) || countLive(t, ie.Dir) != 2 {
					t.Errorf("the staged sstables are not where the error says: %v", err)
				}
			}
		})
	}
}

// Calls run concurrently on the one client: it receives the second request before it answers
// the first, and the answers, in reverse order, reach their own callers.
func TestJMXConcurrentCalls(t *testing.T) {
	t.Setenv("SLUICE_FAKE_JMX", "pair")
	t.Setenv("SLUICE_FAKE_JMX_LOG", filepath.Join(t.TempDir(), "jmx.log"))
	j := &JMX{Address: "127.0.0.1:7199", Java: []string{os.Args[0]}, StartTimeout: 20 * time.Second}
	defer j.Close()
	errs := make(chan error, 2)
	for _, table := range []string{"a", "b"} {
		go func() {
			_, err := j.Import(context.Background(), "ks", table, "/staging/ks/"+table, SidecarImportFlags)
			errs <- err
		}()
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if j.Starts() != 1 {
		t.Errorf("%d client starts", j.Starts())
	}
}

// A cancelled import returns at once with its outcome unknown and leaves the sstables staged;
// the client keeps running for the other calls.
func TestJMXCancelled(t *testing.T) {
	f := newJMXFixture(t, 1, "ignore")
	f.im.JMX.Java = []string{"sh", "-c", `echo '{"ready":true}'; sleep 60`, "sh"}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := f.im.Import(ctx, f.req())
	if !errors.Is(err, ErrOutcomeUnknown) || time.Since(start) > 10*time.Second {
		t.Fatalf("%v after %v", err, time.Since(start))
	}
	if p := f.im.JMX.p; p == nil || p.dead() || f.im.JMX.Starts() != 1 {
		t.Error("the client did not keep running")
	}
	if countLive(t, f.src) != 0 || countLive(t, f.live) != 0 {
		t.Errorf("source %d, live %d: the sstables should be staged", countLive(t, f.src), countLive(t, f.live))
	}
}

// The committed class is compiled from the committed source: `make jmx-class` writes both the
// class and the source's SHA-256 beside it, so editing the source without recompiling fails
// here. The class is Java 11's format (major version 55), the oldest Java Cassandra 4.1 and
// 5.0 run on, and it is what the binary embeds.
func TestJMXClassIsFresh(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("java", "SluiceJMX.java"))
	if err != nil {
		t.Fatal(err)
	}
	rec, err := os.ReadFile(filepath.Join("java", "SluiceJMX.java.sha256"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(src)
	if got := strings.Fields(string(rec)); len(got) == 0 || got[0] != hex.EncodeToString(sum[:]) {
		t.Fatalf("java/SluiceJMX.class is stale: the source's SHA-256 is %x, the class was compiled from %q; run `make jmx-class`", sum, rec)
	}
	class, err := os.ReadFile(filepath.Join("java", "SluiceJMX.class"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(class, jmxClass) {
		t.Error("the embedded class is not java/SluiceJMX.class")
	}
	if len(class) < 8 || binary.BigEndian.Uint32(class) != 0xCAFEBABE || binary.BigEndian.Uint16(class[6:]) != 55 {
		t.Errorf("java/SluiceJMX.class is not a Java 11 class file (major version %d)", binary.BigEndian.Uint16(class[6:]))
	}
	ents, _ := os.ReadDir("java")
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".class") && e.Name() != "SluiceJMX.class" {
			t.Errorf("%s: the client must compile to one class (only SluiceJMX.class is embedded)", e.Name())
		}
	}
}
