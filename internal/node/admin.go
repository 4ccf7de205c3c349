package node

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/sluicedb/sluice/stream"
)

// maxRequestBody bounds an admin request body; the largest legitimate one is a few dozen bytes.
const maxRequestBody = 64 << 10

// StreamsResponse is GET /v1/streams.
type StreamsResponse struct {
	Sessions []stream.SessionStatus `json:"sessions"`
}

// ThroughputRequest is the body of POST /v1/throughput; an absent field keeps its limit.
type ThroughputRequest struct {
	OutboundBytesPerSecond *int64 `json:"outbound_bytes_per_second"`
	InboundBytesPerSecond  *int64 `json:"inbound_bytes_per_second"`
}

// ErrorResponse is the body of every 4xx and 5xx answer.
type ErrorResponse struct {
	Error string `json:"error"`
}

// handler routes the admin API, behind guard (adminauth.go):
//
//	GET  /metrics         Prometheus text exposition of the node's registry
//	GET  /v1/status       Status
//	GET  /v1/streams      StreamsResponse
//	GET  /v1/throughput   Throughput
//	POST /v1/throughput   ThroughputRequest → Throughput (the limits now in force)
//	GET  /v1/load         LoadResponse: this node's live sstable bytes
//	GET  /v1/ring         RingView (?load=false skips asking every member for its load)
//	GET  /v1/ops          OpsResponse
//	POST /v1/ops/bootstrap     {} → OpStatus: retry the bootstrap of a JOINING node
//	POST /v1/ops/decommission  {} → OpStatus
//	POST /v1/ops/move          MoveRequest → OpStatus
//	POST /v1/ops/cleanup       CleanupRequest (may be {}) → OpStatus
//	POST /v1/ops/import        ImportRequest → OpStatus
//	POST /v1/ops/repair        RepairRequest → OpStatus
//
// The POST /v1/ops/{kind} endpoints start the operation and answer at once with its status;
// poll GET /v1/ops for its progress and outcome. Operations run one at a time (409 otherwise);
// those that need the ring answer 409 on a node without membership or in the wrong state.
// What nodes ask of each other (load, tables, fetches, repair trees) is not here: it rides
// the peer protocol (peerapi.go) with mutual TLS.
//
// Unknown paths answer 404 and other methods 405, both with an ErrorResponse.
func (n *Node) handler() *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(n.metrics.Registry, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /v1/status", n.getStatus)
	mux.HandleFunc("GET /v1/streams", n.getStreams)
	mux.HandleFunc("GET /v1/throughput", n.getThroughput)
	mux.HandleFunc("POST /v1/throughput", n.postThroughput)
	mux.HandleFunc("GET /v1/load", n.getLoad)
	mux.HandleFunc("GET /v1/ring", n.getRing)
	mux.HandleFunc("GET /v1/ops", n.getOps)
	mux.HandleFunc("POST /v1/ops/bootstrap", n.postOp(func(*http.Request) (OpStatus, error) {
		return n.StartBootstrap()
	}))
	mux.HandleFunc("POST /v1/ops/decommission", n.postOp(func(*http.Request) (OpStatus, error) {
		return n.StartDecommission()
	}))
	mux.HandleFunc("POST /v1/ops/move", n.postOp(func(r *http.Request) (OpStatus, error) {
		var req MoveRequest
		if err := decodeStrict(r.Body, &req); err != nil {
			return OpStatus{}, badRequest{err}
		}
		t, err := strconv.ParseInt(req.Token, 10, 64)
		if err != nil || t == math.MinInt64 {
			return OpStatus{}, badRequest{fmt.Errorf("token %q: want a Murmur3 token (a signed 64-bit integer above the minimum)", req.Token)}
		}
		return n.StartMove(t)
	}))
	mux.HandleFunc("POST /v1/ops/cleanup", n.postOp(func(r *http.Request) (OpStatus, error) {
		var req CleanupRequest
		if err := decodeStrict(r.Body, &req); err != nil {
			return OpStatus{}, badRequest{err}
		}
		return n.StartCleanup(req)
	}))
	mux.HandleFunc("POST /v1/ops/import", n.postOp(func(r *http.Request) (OpStatus, error) {
		var req ImportRequest
		if err := decodeStrict(r.Body, &req); err != nil {
			return OpStatus{}, badRequest{err}
		}
		return n.StartImport(req)
	}))
	mux.HandleFunc("POST /v1/ops/repair", n.postOp(func(r *http.Request) (OpStatus, error) {
		var req RepairRequest
		if err := decodeStrict(r.Body, &req); err != nil {
			return OpStatus{}, badRequest{err}
		}
		return n.StartRepair(req)
	}))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { noRoute(mux, w, r) })
	return mux
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

func (n *Node) getStatus(w http.ResponseWriter, r *http.Request) {
	s, err := n.Status()
	if err != nil {
		n.log.Error().Err(err).Msg("status")
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, s)
}

func (n *Node) getStreams(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, StreamsResponse{Sessions: n.Sessions()})
}

func (n *Node) getThroughput(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, n.Throughput())
}

func (n *Node) postThroughput(w http.ResponseWriter, r *http.Request) {
	var req ThroughputRequest
	if err := decodeStrict(http.MaxBytesReader(w, r.Body, maxRequestBody), &req); err != nil {
		writeError(w, http.StatusBadRequest, "bad throughput request: "+err.Error())
		return
	}
	if req.OutboundBytesPerSecond == nil && req.InboundBytesPerSecond == nil {
		writeError(w, http.StatusBadRequest, "bad throughput request: give outbound_bytes_per_second, inbound_bytes_per_second or both")
		return
	}
	// Read-modify-write under the node's lock would need a second lock order; a concurrent
	// change of the other direction is last-writer-wins, as with nodetool.
	t := n.Throughput()
	if req.OutboundBytesPerSecond != nil {
		t.OutboundBytesPerSecond = *req.OutboundBytesPerSecond
	}
	if req.InboundBytesPerSecond != nil {
		t.InboundBytesPerSecond = *req.InboundBytesPerSecond
	}
	if err := n.SetThroughput(t); err != nil {
		var ce *ConfigError
		if errors.As(err, &ce) {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("%s: %s", ce.Field, ce.Reason))
			return
		}
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, t)
}

// MoveRequest is the body of POST /v1/ops/move; the token is a decimal string, since JSON
// numbers lose precision beyond 2^53 in many clients.
type MoveRequest struct {
	Token string `json:"token"`
}

// badRequest marks a request error (400).
type badRequest struct{ err error }

func (b badRequest) Error() string { return b.err.Error() }

// opError writes an operation's refusal with the status that fits it.
func opError(w http.ResponseWriter, err error) {
	var br badRequest
	switch {
	case errors.As(err, &br):
		writeError(w, http.StatusBadRequest, err.Error())
	case errors.Is(err, ErrOpRunning), errors.Is(err, ErrNoMembership), errors.Is(err, ErrBadState):
		writeError(w, http.StatusConflict, err.Error())
	default:
		writeError(w, http.StatusBadRequest, err.Error())
	}
}

func (n *Node) postOp(start func(r *http.Request) (OpStatus, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, maxRequestBody)
		s, err := start(r)
		if err != nil {
			opError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, s)
	}
}

func (n *Node) getOps(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, OpsResponse{Ops: n.Ops()})
}

func (n *Node) getLoad(w http.ResponseWriter, r *http.Request) {
	l, err := n.Load()
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, LoadResponse{LoadBytes: l})
}

func (n *Node) getRing(w http.ResponseWriter, r *http.Request) {
	v, err := n.RingView(r.Context(), r.URL.Query().Get("load") != "false")
	if err != nil {
		if errors.Is(err, ErrNoMembership) {
			writeError(w, http.StatusConflict, err.Error())
			return
		}
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, v)
}

// decodeStrict decodes exactly one JSON value with no unknown fields and nothing after it.
func decodeStrict(r io.Reader, v any) error {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		if errors.Is(err, io.EOF) {
			return errors.New("empty body")
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
