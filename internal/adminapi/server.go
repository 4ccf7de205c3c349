package adminapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/sluicedb/sluice/stream"
)

// Backend is what the admin API serves: the node, seen through the operator's eyes. Errors
// that are the request's fault or the node's state's are *Error with their status; any other
// error is a 500.
type Backend interface {
	Status() (Status, error)
	Sessions() []stream.SessionStatus
	Throughput() Throughput
	SetThroughput(Throughput) error
	Load() (int64, error)
	RingView(ctx context.Context, withLoad bool) (RingView, error)
	Ops() []OpStatus
	StartBootstrap() (OpStatus, error)
	StartDecommission() (OpStatus, error)
	StartMove(token int64) (OpStatus, error)
	StartCleanup(CleanupRequest) (OpStatus, error)
	StartImport(ImportRequest) (OpStatus, error)
	StartRepair(RepairRequest) (OpStatus, error)
	StartRebuild(RebuildRequest) (OpStatus, error)
	StartReplace() (OpStatus, error)
	// Metrics serves GET /metrics.
	Metrics() http.Handler
}

// OpWaiter is a Backend that can wait for an operation to end (GET /v1/ops?wait=).
type OpWaiter interface {
	// WaitOp returns once operation id is not running, or when ctx ends.
	WaitOp(ctx context.Context, id int)
}

// maxOpWait bounds how long one GET /v1/ops?wait= holds its request.
const maxOpWait = 5 * time.Second

// Error is a refusal with its HTTP status (400 for a bad request, 409 for a conflict with the
// node's state).
type Error struct {
	Status int
	Err    error
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// BadRequest marks err as the request's fault (400).
func BadRequest(err error) error { return &Error{Status: http.StatusBadRequest, Err: err} }

// Conflict marks err as a conflict with the node's state (409).
func Conflict(err error) error { return &Error{Status: http.StatusConflict, Err: err} }

// maxRequestBody bounds an admin request body; the largest legitimate one is a few hundred bytes.
const maxRequestBody = 64 << 10

// Server is the admin API: the routes over a Backend, behind the guard (auth.go).
type Server struct {
	b     Backend
	mux   *http.ServeMux
	token string
	hosts hostSet
}

// NewServer serves b to requests carrying token on the listener bound at bound (configured
// as configured).
func NewServer(b Backend, token string, bound net.Addr, configured string) *Server {
	s := &Server{b: b, token: token, hosts: adminHosts(bound, configured)}
	s.mux = s.routes()
	return s
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	guard(s.token, s.hosts, s.mux).ServeHTTP(w, r)
}

// routes:
//
//	GET  /metrics         Prometheus text exposition of the node's registry
//	GET  /v1/status       Status
//	GET  /v1/streams      StreamsResponse
//	GET  /v1/throughput   Throughput
//	POST /v1/throughput   ThroughputRequest → Throughput (the limits now in force)
//	GET  /v1/load         LoadResponse: this node's live sstable bytes
//	GET  /v1/ring         RingView (?load=false skips asking every member for its load)
//	GET  /v1/ops          OpsResponse (?wait=ID&wait_ms=N: once operation ID has ended, or after N ms)
//	POST /v1/ops/bootstrap     {} → OpStatus: retry the bootstrap of a JOINING node
//	POST /v1/ops/decommission  {} → OpStatus
//	POST /v1/ops/move          MoveRequest → OpStatus
//	POST /v1/ops/cleanup       CleanupRequest (may be {}) → OpStatus
//	POST /v1/ops/import        ImportRequest → OpStatus
//	POST /v1/ops/repair        RepairRequest → OpStatus
//	POST /v1/ops/rebuild       RebuildRequest (may be {}) → OpStatus
//	POST /v1/ops/replace       {} → OpStatus: retry the replacement of replace_address
//	GET  /v1/cassandra/ring    CassandraRing (a Cassandra sidecar; cassandra.go)
//	POST /v1/cassandra/import  CassandraImportRequest → CassandraImportResult
//	POST /v1/cassandra/rebuild CassandraRebuildRequest (may be {}) → OpStatus
//	POST /v1/cassandra/replace CassandraReplaceRequest → OpStatus
//	POST /v1/cassandra/load    CassandraLoadRequest → OpStatus
//
// The POST /v1/ops/{kind} endpoints start the operation and answer at once with its status;
// poll GET /v1/ops for its progress and outcome. Operations run one at a time (409 otherwise);
// those that need the ring answer 409 on a node without membership or in the wrong state.
// What nodes ask of each other (load, tables, fetches, repair trees) is not here: it rides
// the peer protocol (internal/peerrpc) with mutual TLS.
//
// Unknown paths answer 404 and other methods 405, both with an ErrorResponse.
func (s *Server) routes() *http.ServeMux {
	b := s.b
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", b.Metrics())
	mux.HandleFunc("GET /v1/status", func(w http.ResponseWriter, r *http.Request) {
		st, err := b.Status()
		answer(w, st, err)
	})
	mux.HandleFunc("GET /v1/streams", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, StreamsResponse{Sessions: b.Sessions()})
	})
	mux.HandleFunc("GET /v1/throughput", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, b.Throughput())
	})
	mux.HandleFunc("POST /v1/throughput", s.postThroughput)
	mux.HandleFunc("GET /v1/load", func(w http.ResponseWriter, r *http.Request) {
		l, err := b.Load()
		answer(w, LoadResponse{LoadBytes: l}, err)
	})
	mux.HandleFunc("GET /v1/ring", func(w http.ResponseWriter, r *http.Request) {
		v, err := b.RingView(r.Context(), r.URL.Query().Get("load") != "false")
		answer(w, v, err)
	})
	mux.HandleFunc("GET /v1/ops", func(w http.ResponseWriter, r *http.Request) {
		// ?wait=ID&wait_ms=N answers once operation ID has ended, or after N ms (at most
		// maxOpWait): a client follows an operation without sleeping past its end.
		if ow, ok := b.(OpWaiter); ok && r.URL.Query().Has("wait") {
			id, err1 := strconv.Atoi(r.URL.Query().Get("wait"))
			ms, err2 := strconv.Atoi(r.URL.Query().Get("wait_ms"))
			if err1 != nil || err2 != nil || ms < 0 {
				writeError(w, http.StatusBadRequest, fmt.Sprintf("GET /v1/ops?wait=%q&wait_ms=%q: want an operation id and milliseconds", r.URL.Query().Get("wait"), r.URL.Query().Get("wait_ms")))
				return
			}
			ctx, cancel := context.WithTimeout(r.Context(), min(time.Duration(ms)*time.Millisecond, maxOpWait))
			ow.WaitOp(ctx, id)
			cancel()
		}
		writeJSON(w, http.StatusOK, OpsResponse{Ops: b.Ops()})
	})
	mux.HandleFunc("POST /v1/ops/bootstrap", postOp(func(struct{}) (OpStatus, error) { return b.StartBootstrap() }))
	mux.HandleFunc("POST /v1/ops/decommission", postOp(func(struct{}) (OpStatus, error) { return b.StartDecommission() }))
	mux.HandleFunc("POST /v1/ops/move", postOp(func(req MoveRequest) (OpStatus, error) {
		t, err := strconv.ParseInt(req.Token, 10, 64)
		if err != nil || t == math.MinInt64 {
			return OpStatus{}, BadRequest(fmt.Errorf("token %q: want a Murmur3 token (a signed 64-bit integer above the minimum)", req.Token))
		}
		return b.StartMove(t)
	}))
	mux.HandleFunc("POST /v1/ops/cleanup", postOp(b.StartCleanup))
	mux.HandleFunc("POST /v1/ops/import", postOp(b.StartImport))
	mux.HandleFunc("POST /v1/ops/repair", postOp(b.StartRepair))
	mux.HandleFunc("POST /v1/ops/rebuild", postOp(b.StartRebuild))
	mux.HandleFunc("POST /v1/ops/replace", postOp(func(struct{}) (OpStatus, error) { return b.StartReplace() }))
	s.cassandraRoutes(mux)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { noRoute(mux, w, r) })
	return mux
}

func (s *Server) postThroughput(w http.ResponseWriter, r *http.Request) {
	var req ThroughputRequest
	if err := decodeStrict(http.MaxBytesReader(w, r.Body, maxRequestBody), &req); err != nil {
		writeError(w, http.StatusBadRequest, "bad throughput request: "+err.Error())
		return
	}
	if req.OutboundBytesPerSecond == nil && req.InboundBytesPerSecond == nil {
		writeError(w, http.StatusBadRequest, "bad throughput request: give outbound_bytes_per_second, inbound_bytes_per_second or both")
		return
	}
	// Read-modify-write: a concurrent change of the other direction is last-writer-wins, as
	// with nodetool.
	t := s.b.Throughput()
	if req.OutboundBytesPerSecond != nil {
		t.OutboundBytesPerSecond = *req.OutboundBytesPerSecond
	}
	if req.InboundBytesPerSecond != nil {
		t.InboundBytesPerSecond = *req.InboundBytesPerSecond
	}
	answer(w, t, s.b.SetThroughput(t))
}

// postOp decodes the request strictly (a bodyless operation takes {}) and starts the
// operation.
func postOp[Req any](start func(Req) (OpStatus, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req Req
		if err := decodeStrict(http.MaxBytesReader(w, r.Body, maxRequestBody), &req); err != nil {
			writeError(w, http.StatusBadRequest, err.Error())
			return
		}
		st, err := start(req)
		answer(w, st, err)
	}
}

// answer writes v, or err with its status.
func answer(w http.ResponseWriter, v any, err error) {
	var e *Error
	switch {
	case err == nil:
		writeJSON(w, http.StatusOK, v)
	case errors.As(err, &e):
		writeError(w, e.Status, err.Error())
	default:
		writeError(w, http.StatusInternalServerError, err.Error())
	}
}

// noRoute answers what no pattern took: 405 with Allow when the path exists under other
// methods, else 404, both as JSON (the mux's own answers are plain text).
func noRoute(mux *http.ServeMux, w http.ResponseWriter, r *http.Request) {
	var allowed []string
	for _, m := range []string{http.MethodGet, http.MethodPost} {
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, pattern := mux.Handler(probe); pattern != "/" && pattern != "" {
			allowed = append(allowed, m)
		}
	}
	if len(allowed) == 0 {
		writeError(w, http.StatusNotFound, fmt.Sprintf("no such endpoint %s", r.URL.Path))
		return
	}
	w.Header().Set("Allow", strings.Join(allowed, ", "))
	writeError(w, http.StatusMethodNotAllowed, fmt.Sprintf("%s %s: want %s", r.Method, r.URL.Path, strings.Join(allowed, " or ")))
}

// decodeStrict decodes exactly one JSON value with no unknown fields and nothing after it; an
// empty body is {}.
func decodeStrict(r io.Reader, v any) error {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		if errors.Is(err, io.EOF) {
			return nil
		}
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("data after the JSON object")
	}
	return nil
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v) // the client went away; nothing useful to do
}

func writeError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, ErrorResponse{Error: msg})
}

// isLoopback reports whether addr's host is a loopback address or "localhost".
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
