package testcluster

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/rs/zerolog"
	"gopkg.in/yaml.v3"

	"github.com/sluicedb/sluice/internal/adminapi"
	"github.com/sluicedb/sluice/internal/node"
	"github.com/sluicedb/sluice/membership/gossip"
	"github.com/sluicedb/sluice/stream"
)

// Node is one member of a Cluster: in this process or a child process.
type Node struct {
	c       *Cluster
	Name    string
	Spec    NodeSpec
	cfg     node.Config
	logPath string
	proxy   *Proxy

	mu      sync.Mutex
	running bool
	// in-process
	n      *node.Node
	cancel context.CancelFunc
	done   chan error
	logf   *os.File
	// process
	cmd *exec.Cmd
}

// AdminAddr is the node's admin API address (fixed for the cluster's lifetime).
func (n *Node) AdminAddr() string { return n.cfg.AdminAddr }

// StreamAddr is the address peers stream from: the proxy's when there is one.
func (n *Node) StreamAddr() string {
	if n.proxy != nil {
		return n.proxy.Addr()
	}
	return n.cfg.StreamAddr
}

// GossipAddr is the node's gossip address.
func (n *Node) GossipAddr() string { return n.cfg.GossipAddr }

// DataDir is the node's data directory.
func (n *Node) DataDir() string { return n.cfg.DataDirs[0] }

// LogPath is the file the node logs to.
func (n *Node) LogPath() string { return n.logPath }

// Proxy is the proxy in front of the node's stream port, nil without Options.Proxies.
func (n *Node) Proxy() *Proxy { return n.proxy }

// PID is the node process's id, 0 in-process or when stopped.
func (n *Node) PID() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil || n.cmd.Process == nil {
		return 0
	}
	return n.cmd.Process.Pid
}

// Running reports whether the node was started and not stopped or killed since.
func (n *Node) Running() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.running
}

func (n *Node) configPath() string { return filepath.Join(n.c.nodeDir(n.Name), "sluice.yaml") }

// start writes the configuration and runs the node, then waits until its admin API answers
// and it has joined gossip.
func (n *Node) start(ctx context.Context) error {
	b, err := yaml.Marshal(n.cfg)
	if err != nil {
		return err
	}
	if err := os.WriteFile(n.configPath(), b, 0o644); err != nil {
		return err
	}
	logf, err := os.OpenFile(n.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	n.mu.Lock()
	if n.c.opts.Processes {
		args := []string{"--config", n.configPath()}
		if n.proxy != nil {
			args = append(args, "--advertise-stream", n.proxy.Addr())
		}
		cmd := n.c.opts.Exec(args)
		if n.c.net != nil {
			cmd = n.c.net.wrap(n.Name, cmd)
		}
		cmd.Stdout, cmd.Stderr = logf, logf
		cmd.SysProcAttr = procAttr(n.c.opts.Detach)
		if err := cmd.Start(); err != nil {
			n.mu.Unlock()
			logf.Close()
			return fmt.Errorf("starting %s: %w", n.Name, err)
		}
		logf.Close() // the child holds its own descriptor
		n.cmd = cmd
		done := make(chan error, 1)
		n.done = done
		go func() { done <- cmd.Wait() }()
	} else {
		nd, err := newNode(n.cfg, n.advertise(), zerolog.New(logf).With().Timestamp().Logger())
		if err != nil {
			n.mu.Unlock()
			logf.Close()
			return err
		}
		rctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		n.n, n.cancel, n.done, n.logf = nd, cancel, done, logf
		go func() { done <- nd.Run(rctx) }()
	}
	n.running = true
	done := n.done
	n.mu.Unlock()
	return waitFor(ctx, 60*time.Second, n.Name+" to join", func() (bool, error) {
		select {
		case err := <-done:
			// Gone before it joined: nothing left to stop (Stop would wait for done again).
			n.mu.Lock()
			n.running, n.cmd = false, nil
			if n.logf != nil {
				n.logf.Close()
			}
			n.mu.Unlock()
			return false, fatal{fmt.Errorf("%s exited: %v (log %s)", n.Name, err, n.logPath)}
		default:
		}
		st, err := n.Status(ctx)
		return err == nil && st.Ring != nil, err
	})
}

func (n *Node) advertise() string {
	if n.proxy != nil {
		return n.proxy.Addr()
	}
	return ""
}

// Restart starts a stopped or killed node again with its original configuration, except for
// the inbound limit of NodeSpec, which applies only to the first start.
func (n *Node) Restart(ctx context.Context) error {
	if n.Running() {
		return fmt.Errorf("testcluster: %s is running", n.Name)
	}
	n.cfg.Throughput = adminapi.Throughput{}
	return n.start(ctx)
}

// Kill ends the node abruptly: SIGKILL for a process; in-process, its context is cancelled
// and its shutdown is waited for at most 10s (the closest a shared process gets: no -9).
func (n *Node) Kill() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.running {
		return nil
	}
	n.running = false
	if n.cmd != nil {
		err := n.cmd.Process.Kill()
		<-n.done
		n.cmd = nil
		return err
	}
	n.cancel()
	select {
	case <-n.done:
	case <-time.After(10 * time.Second):
	}
	n.logf.Close()
	return nil
}

// Stop ends the node cleanly (SIGTERM, or cancelling its context), forcing it after 15s.
func (n *Node) Stop() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.running {
		return nil
	}
	n.running = false
	if n.cmd != nil {
		n.cmd.Process.Signal(syscall.SIGTERM)
		var err error
		select {
		case err = <-n.done:
		case <-time.After(15 * time.Second):
			n.cmd.Process.Kill()
			err = <-n.done
		}
		n.cmd = nil
		return err
	}
	n.cancel()
	err := <-n.done
	n.logf.Close()
	return err
}

// newNode builds a node of the cluster: the real QUIC stream server, advertised at advertise
// when set (a proxy in front of it), with gossip tuned for fast failure detection.
func newNode(cfg node.Config, advertise string, log zerolog.Logger) (*node.Node, error) {
	newStream := node.QUICStreamServer
	if advertise != "" {
		newStream = func(sc node.StreamConfig, cat stream.Catalog, log zerolog.Logger) (node.StreamServer, error) {
			s, err := node.QUICStreamServer(sc, cat, log)
			if err != nil {
				return nil, err
			}
			a, err := net.ResolveUDPAddr("udp", advertise)
			if err != nil {
				return nil, err
			}
			return advertised{s, a}, nil
		}
	}
	return node.New(node.Options{Config: cfg, Logger: log, NewStreamServer: newStream,
		TuneGossip: tuneGossip, ShutdownTimeout: 5 * time.Second})
}

// tuneGossip is gossip's test configuration (loopback, fast joins) with failure detection
// relaxed enough that nodes streaming hundreds of MiB on two busy cores are not declared dead:
// the test values (100ms probe timeout) fail healthy peers' sessions under that load.
func tuneGossip(c gossip.Config) gossip.Config {
	c = c.ForTests()
	c.ProbeInterval = time.Second
	c.ProbeTimeout = 500 * time.Millisecond
	c.SuspicionMult = 4
	return c
}

// advertised reports another address than the one its server is bound to, so that gossip
// carries the proxy's address and peers stream through it. node announces Addr() as its
// stream_addr and has no separate advertised-address setting.
type advertised struct {
	node.StreamServer
	addr net.Addr
}

func (a advertised) Addr() net.Addr { return a.addr }

// NodeMain runs one node process: NodeMain(["--config", F, "--advertise-stream", A]) until
// SIGINT or SIGTERM, logging JSON lines to stderr. It returns the exit code. `sluice
// testcluster node` and test binaries that re-execute themselves call it.
func NodeMain(args []string) int {
	fs := flag.NewFlagSet("testcluster node", flag.ContinueOnError)
	cfgPath := fs.String("config", "", "node configuration (YAML)")
	adv := fs.String("advertise-stream", "", "stream address to announce instead of the bound one")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	log := zerolog.New(os.Stderr).With().Timestamp().Logger()
	cfg, err := node.LoadConfig(*cfgPath)
	if err != nil {
		log.Error().Err(err).Msg("config")
		return 2
	}
	n, err := newNode(cfg, *adv, log)
	if err != nil {
		log.Error().Err(err).Msg("config")
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := n.Run(ctx); err != nil {
		log.Error().Err(err).Msg("node failed")
		return 1
	}
	return 0
}

// adminClient bounds every admin call; operations are polled, never waited on in one call,
// except POST /v1/ops/fetch, which the harness does not use.
var adminClient = &http.Client{Timeout: 10 * time.Second}

// call sends a JSON request to the node's admin API and decodes the answer into out.
func (n *Node) call(ctx context.Context, method, path string, body, out any) error {
	return adminCall(ctx, n.cfg.AdminAddr, method, path, body, out)
}

func adminCall(ctx context.Context, addr, method, path string, body, out any) error {
	err := adminapi.Call(ctx, adminClient, "http://"+addr, method, path, body, out)
	var ae *adminapi.StatusError
	if err != nil && !errors.As(err, &ae) {
		err = fmt.Errorf("admin API of %s: %w", addr, err)
	}
	return err
}

// AdminError is a non-200 answer of a node's admin API.
type AdminError = adminapi.StatusError

// Status is GET /v1/status.
func (n *Node) Status(ctx context.Context) (adminapi.Status, error) {
	var s adminapi.Status
	return s, n.call(ctx, http.MethodGet, "/v1/status", nil, &s)
}

// Ring is GET /v1/ring?load=false.
func (n *Node) Ring(ctx context.Context) (adminapi.RingView, error) {
	var v adminapi.RingView
	return v, n.call(ctx, http.MethodGet, "/v1/ring?load=false", nil, &v)
}

// Ops is GET /v1/ops.
func (n *Node) Ops(ctx context.Context) ([]adminapi.OpStatus, error) {
	var r adminapi.OpsResponse
	return r.Ops, n.call(ctx, http.MethodGet, "/v1/ops", nil, &r)
}

// Streams is GET /v1/streams.
func (n *Node) Streams(ctx context.Context) ([]stream.SessionStatus, error) {
	var r adminapi.StreamsResponse
	return r.Sessions, n.call(ctx, http.MethodGet, "/v1/streams", nil, &r)
}

// StartOp is POST /v1/ops/KIND with body (nil for none).
func (n *Node) StartOp(ctx context.Context, kind string, body any) (adminapi.OpStatus, error) {
	var s adminapi.OpStatus
	if body == nil && kind != adminapi.OpBootstrap && kind != adminapi.OpDecommission {
		body = struct{}{}
	}
	return s, n.call(ctx, http.MethodPost, "/v1/ops/"+kind, body, &s)
}

// WaitOp waits until operation id is no longer running and returns its last status; an
// operation that failed is also an error wrapping ErrOpFailed.
func (n *Node) WaitOp(ctx context.Context, id int, d time.Duration) (adminapi.OpStatus, error) {
	var last adminapi.OpStatus
	err := waitFor(ctx, d, fmt.Sprintf("operation %d on %s", id, n.Name), func() (bool, error) {
		ops, err := n.Ops(ctx)
		if err != nil {
			return false, err
		}
		for _, o := range ops {
			if o.ID == id {
				last = o
				return o.State != adminapi.OpRunning, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return last, err
	}
	if last.State != adminapi.OpComplete {
		return last, fmt.Errorf("%w: %s on %s: %s", ErrOpFailed, last.Kind, n.Name, last.Error)
	}
	return last, nil
}

// LastOp returns the newest operation of kind, ok false when there is none.
func (n *Node) LastOp(ctx context.Context, kind string) (adminapi.OpStatus, bool, error) {
	ops, err := n.Ops(ctx)
	if err != nil {
		return adminapi.OpStatus{}, false, err
	}
	for i := len(ops) - 1; i >= 0; i-- {
		if ops[i].Kind == kind {
			return ops[i], true, nil
		}
	}
	return adminapi.OpStatus{}, false, nil
}
