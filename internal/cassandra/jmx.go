package cassandra

import (
	"bufio"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The JMX client: the Importer's fast path to importNewSSTables (cassandra.jmx_address).
//
// `nodetool import` starts a JVM with Cassandra's whole class path for every import: 6-10 s of
// start-up and ~6 CPU-seconds, more than fetching the sstables took. JMX keeps one small JVM
// running instead: java/SluiceJMX.java, a single class using only javax.management (no
// Cassandra jar), which connects once to the node's JMX port and calls
// ColumnFamilyStoreMBean.importNewSSTables for each request it reads on standard input.
//
// It ships compiled: java/SluiceJMX.class (javac --release 11, `make jmx-class`) is embedded
// in the sluice binary and written to a private temporary directory when the client starts,
// so the host needs a Java 11+ runtime only. A JRE lacks the compiler that Java's single-file
// source launcher needs (jdk.compiler), and Cassandra hosts often have only a JRE (the
// official images are JRE-based). TestJMXClassIsFresh fails when the committed class is stale
// relative to the source.

//go:embed java/SluiceJMX.class
var jmxClass []byte

// jmxClassName is the embedded class's name (no package).
const jmxClassName = "SluiceJMX"

// ImportFlags are importNewSSTables' flags, in the order of its eight-flag overload (Cassandra
// 4.1 and 5.0; the source paths come first).
type ImportFlags struct {
	ResetLevel       bool // the sstables' level is set to 0
	ClearRepaired    bool // repairedAt and pending repair are cleared
	VerifySSTables   bool // a non-quick verify: also Data.db's CRC32 against Digest.crc32
	VerifyTokens     bool // every key's token must be in a range the node owns now
	InvalidateCaches bool // the row cache's entries of every key are invalidated
	ExtendedVerify   bool // every row deserialized
	CopyData         bool // copied instead of moved
}

// SidecarImportFlags are the flags the sidecar's imports pass through JMX: those of a plain
// `nodetool import` (ImportArgs), but VerifySSTables false. What that skips, per
// SortedTableVerifier.verify in Cassandra 5.0, is only verifyDigest: one more read of the whole
// Data.db to compare its CRC32 with Digest.crc32. The Importer's strict verification
// (VerifyStrict) has just made exactly that check, and more: every chunk's CRC, the digest,
// the layout Cassandra's sequential readers need. With VerifySSTables false Cassandra still
// opens each sstable and checks its version, its metadata (partitioner included), its index
// and its bloom filter (verify's quick part). VerifyTokens stays true: Cassandra checks every
// key against the ranges the node owns at the moment of the import, where sluice's receiver
// checked them against the ranges of its session, planned from a ring read that may be stale
// by then; the two are not equivalent. ResetLevel and ClearRepaired stay true (data from
// another node is not repaired here), InvalidateCaches true (the row cache must not serve
// what the import replaces), ExtendedVerify and CopyData false (the move is a rename, which
// keeps the inode the Importer confirms by).
var SidecarImportFlags = ImportFlags{ResetLevel: true, ClearRepaired: true, VerifySSTables: false, VerifyTokens: true, InvalidateCaches: true}

func (f ImportFlags) fields() []string {
	return []string{strconv.FormatBool(f.ResetLevel), strconv.FormatBool(f.ClearRepaired), strconv.FormatBool(f.VerifySSTables),
		strconv.FormatBool(f.VerifyTokens), strconv.FormatBool(f.InvalidateCaches), strconv.FormatBool(f.ExtendedVerify),
		strconv.FormatBool(f.CopyData)}
}

var (
	// ErrJMX reports an import the JMX client could not make or that Cassandra refused (the
	// call threw, or the client could not connect); Cassandra moves a failed directory's
	// sstables back.
	ErrJMX = errors.New("cassandra: JMX import failed")
	// ErrOutcomeUnknown reports an import call whose answer never came (the connection or the
	// client died, or the context ended): the node may still be importing.
	ErrOutcomeUnknown = errors.New("cassandra: import outcome unknown")
)

// DefaultJMXStartTimeout bounds a client's start: JVM start and the JMX connection.
const DefaultJMXStartTimeout = time.Minute

// JMXServiceURL is the JMX service URL of host:port, as nodetool builds it.
func JMXServiceURL(address string) string {
	return "service:jmx:rmi:///jndi/rmi://" + address + "/jmxrmi"
}

// JMX is the persistent JMX client of one node. The process starts on Start or the first
// Import, and again on the next Import after it died. Imports may run concurrently: each call
// has its id and the client runs it on a thread of its own (Cassandra serializes
// importNewSSTables per table, not across tables). Close stops the process. The fields must not
// change once Import is called.
type JMX struct {
	Address      string   // host:port of the node's JMX port
	Username     string   // JMX user, with PasswordFile ("" without authentication)
	PasswordFile string   // read at each start, so a rotated password is picked up
	Java         []string // argv prefix that runs java (DefaultJava when empty)
	StartTimeout time.Duration

	mu       sync.Mutex
	classDir string
	p        *jmxProc
	starts   int
	nextID   uint64
	closed   bool
}

// NewJMX is the client of cfg's jmx_address, or nil without one. It starts nothing.
func NewJMX(cfg Config) *JMX {
	if cfg.JMXAddress == "" {
		return nil
	}
	return &JMX{Address: cfg.JMXAddress, Username: cfg.JMXUsername, PasswordFile: cfg.JMXPasswordFile, Java: cfg.Java}
}

// jmxProc is one running client. Its reader goroutine hands each answer to the call waiting
// for its id.
type jmxProc struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	ready  chan jmxAnswer // the connection handshake: ready or fatal
	stderr *tailBuffer
	exited chan struct{} // closed once stdout ended and the process was waited for

	mu      sync.Mutex
	pending map[uint64]chan jmxAnswer // calls waiting for their answer
}

// JMXResult is a call that returned: Failed lists the directories Cassandra could not import.
type JMXResult struct {
	Failed  []string
	Elapsed time.Duration
}

// jmxAnswer is one line the client prints.
type jmxAnswer struct {
	Ready  bool     `json:"ready"`
	Fatal  string   `json:"fatal"`
	ID     uint64   `json:"id"`
	Failed []string `json:"failed"`
	Millis int64    `json:"millis"`
	Error  string   `json:"error"`
	Lost   string   `json:"lost"`
}

// Starts is how many client processes were started so far.
func (j *JMX) Starts() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.starts
}

// Import calls importNewSSTables(dir) on keyspace.table with flags. An error wraps ErrJMX
// (nothing was imported, or Cassandra threw) or ErrOutcomeUnknown (no answer: the client or
// its connection died, or ctx ended while Cassandra may still be importing; the client is left
// running for the other calls).
func (j *JMX) Import(ctx context.Context, keyspace, table, dir string, flags ImportFlags) (JMXResult, error) {
	j.mu.Lock()
	if j.closed {
		j.mu.Unlock()
		return JMXResult{}, fmt.Errorf("%w: the client is closed", ErrJMX)
	}
	if err := j.ensure(ctx); err != nil {
		j.mu.Unlock()
		return JMXResult{}, err
	}
	p := j.p
	j.nextID++
	id := j.nextID
	answer := make(chan jmxAnswer, 1)
	p.mu.Lock()
	p.pending[id] = answer
	p.mu.Unlock()
	req := append([]string{"import", strconv.FormatUint(id, 10), keyspace, table, dir}, flags.fields()...)
	for i := range req {
		req[i] = url.QueryEscape(req[i])
	}
	start := time.Now()
	_, werr := io.WriteString(p.stdin, strings.Join(req, " ")+"\n")
	j.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.pending, id)
		p.mu.Unlock()
	}()
	if werr != nil {
		// The request did not reach the client: nothing was called. The client is dying; the
		// next Import starts another.
		p.kill()
		return JMXResult{}, fmt.Errorf("%w: the JMX client of %s died before the call (%v)%s", ErrJMX, j.Address, werr, tailNote(p.stderr))
	}
	select {
	case <-ctx.Done():
		return JMXResult{}, fmt.Errorf("%w: %v while importing %s into %s.%s: Cassandra may still be importing", ErrOutcomeUnknown, ctx.Err(), dir, keyspace, table)
	case a := <-answer:
		switch {
		case a.Lost != "":
			return JMXResult{}, fmt.Errorf("%w: the JMX connection to %s broke during the call: %s", ErrOutcomeUnknown, j.Address, a.Lost)
		case a.Error != "":
			return JMXResult{}, fmt.Errorf("%w: importNewSSTables on %s.%s: %s", ErrJMX, keyspace, table, a.Error)
		}
		el := time.Duration(a.Millis) * time.Millisecond
		if el == 0 {
			el = time.Since(start)
		}
		return JMXResult{Failed: a.Failed, Elapsed: el}, nil
	case <-p.exited:
		// The answer may have come just before the end.
		select {
		case a := <-answer:
			if a.Lost == "" && a.Error == "" {
				return JMXResult{Failed: a.Failed, Elapsed: time.Since(start)}, nil
			}
		default:
		}
		return JMXResult{}, fmt.Errorf("%w: the JMX client of %s died during the call%s", ErrOutcomeUnknown, j.Address, tailNote(p.stderr))
	}
}

// Start starts the client now unless it runs, so that the first import does not wait for the
// JVM and a configuration that cannot connect shows at once.
func (j *JMX) Start(ctx context.Context) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return fmt.Errorf("%w: the client is closed", ErrJMX)
	}
	return j.ensure(ctx)
}

// ensure starts a client when none runs (the last one died); j.mu is held.
func (j *JMX) ensure(ctx context.Context) error {
	if j.p != nil && j.p.dead() {
		j.p = nil
	}
	if j.p == nil {
		p, err := j.start(ctx)
		if err != nil {
			return fmt.Errorf("%w: starting the JMX client of %s: %v", ErrJMX, j.Address, err)
		}
		j.p = p
	}
	return nil
}

// start writes the class, starts the client and waits for it to connect.
func (j *JMX) start(ctx context.Context) (*jmxProc, error) {
	if j.classDir == "" {
		d, err := os.MkdirTemp("", "sluice-jmx-")
		if err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(d, jmxClassName+".class"), jmxClass, 0o644); err != nil {
			os.RemoveAll(d)
			return nil, err
		}
		j.classDir = d
	}
	java := j.Java
	if len(java) == 0 {
		java = DefaultJava
	}
	argv := append(append([]string(nil), java...), "-cp", j.classDir, jmxClassName, JMXServiceURL(j.Address))
	password := ""
	if j.PasswordFile != "" {
		b, err := os.ReadFile(j.PasswordFile)
		if err != nil {
			return nil, fmt.Errorf("cassandra.jmx_password_file: %w", err)
		}
		password = strings.TrimSpace(string(b))
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), "SLUICE_JMX_USERNAME="+j.Username, "SLUICE_JMX_PASSWORD="+password)
	// Its own process group: a wrapper script and the JVM it starts are stopped together.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	p := &jmxProc{cmd: cmd, ready: make(chan jmxAnswer, 1), stderr: &tailBuffer{}, exited: make(chan struct{}), pending: map[uint64]chan jmxAnswer{}}
	cmd.Stderr = p.stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	j.starts++
	go p.read(stdout)
	timeout := j.StartTimeout
	if timeout <= 0 {
		timeout = DefaultJMXStartTimeout
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		p.kill()
		return nil, ctx.Err()
	case <-timer.C:
		p.kill()
		return nil, fmt.Errorf("%s: not connected after %v%s", strings.Join(argv, " "), timeout, tailNote(p.stderr))
	case <-p.exited:
		select {
		case a := <-p.ready:
			if a.Fatal != "" {
				return nil, errors.New(a.Fatal)
			}
		default:
		}
		return nil, fmt.Errorf("%s exited (%v) before connecting%s", strings.Join(argv, " "), cmd.ProcessState, tailNote(p.stderr))
	case a := <-p.ready:
		if a.Fatal != "" {
			p.kill()
			return nil, errors.New(a.Fatal)
		}
		return p, nil
	}
}

// read reads the client's standard output until it ends: the handshake to ready, each answer to
// the call waiting for its id (lines that are neither, such as a JVM's warnings, are skipped).
// Then it waits for the process and closes exited.
func (p *jmxProc) read(stdout io.Reader) {
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	handshake := true
	for sc.Scan() {
		var a jmxAnswer
		if json.Unmarshal(sc.Bytes(), &a) != nil {
			continue
		}
		if handshake && (a.Ready || a.Fatal != "") {
			handshake = false
			p.ready <- a
			continue
		}
		p.mu.Lock()
		ch, ok := p.pending[a.ID]
		delete(p.pending, a.ID)
		p.mu.Unlock()
		if ok {
			ch <- a // buffered: never blocks
		}
	}
	_, _ = io.Copy(io.Discard, stdout)
	_ = p.cmd.Wait()
	close(p.exited)
}

func (p *jmxProc) dead() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// kill stops the process group and waits until the process has exited.
func (p *jmxProc) kill() {
	if p.cmd.Process != nil {
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	}
	<-p.exited
}

func tailNote(b *tailBuffer) string {
	if s := strings.TrimSpace(b.String()); s != "" {
		return "; it printed: " + oneLine(s, 2000)
	}
	return ""
}

// Close ends the client: its standard input is closed (it disconnects and exits), and it is
// killed if it has not exited within 5 seconds. The class's directory is removed.
func (j *JMX) Close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.closed = true
	if p := j.p; p != nil {
		_ = p.stdin.Close()
		select {
		case <-p.exited:
		case <-time.After(5 * time.Second):
		}
		p.kill()
		j.p = nil
	}
	if j.classDir != "" {
		err := os.RemoveAll(j.classDir)
		j.classDir = ""
		return err
	}
	return nil
}
