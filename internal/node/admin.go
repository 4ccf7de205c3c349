package node

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"sort"
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

// handler routes the admin API:
//
//	GET  /metrics         Prometheus text exposition of the node's registry
//	GET  /v1/status       Status
//	GET  /v1/streams      StreamsResponse
//	GET  /v1/throughput   Throughput
//	POST /v1/throughput   ThroughputRequest → Throughput (the limits now in force)
//	GET  /v1/load         LoadResponse: this node's live sstable bytes
//	GET  /v1/ring         RingView (?load=false skips asking every member for its load)
//	GET  /v1/ops          OpsResponse
//	POST /v1/ops/bootstrap     (no body) → OpStatus: retry the bootstrap of a JOINING node
//	POST /v1/ops/decommission  (no body) → OpStatus
//	POST /v1/ops/move          MoveRequest → OpStatus
//	POST /v1/ops/cleanup       CleanupRequest (may be {}) → OpStatus
//	POST /v1/ops/import        ImportRequest → OpStatus
//	POST /v1/ops/repair        RepairRequest → OpStatus
//	POST /v1/ops/fetch         FetchOpRequest → FetchOpResponse, synchronously
//	GET|POST /v1/repair/tree   TreeRequest → TreeResponse: this node's Merkle trees, synchronously
//
// The POST /v1/ops/{kind} endpoints start the operation and answer at once with its status;
// poll GET /v1/ops for its progress and outcome. Operations run one at a time (409 otherwise);
// those that need the ring answer 409 on a node without membership or in the wrong state.
//
// Unknown paths answer 404 and other methods 405, both with an ErrorResponse.
func (n *Node) handler() http.Handler {
	metrics := promhttp.HandlerFor(n.metrics.Registry, promhttp.HandlerOpts{})
	routes := map[string]map[string]http.HandlerFunc{
		"/metrics":       {http.MethodGet: metrics.ServeHTTP},
		"/v1/status":     {http.MethodGet: n.getStatus},
		"/v1/streams":    {http.MethodGet: n.getStreams},
		"/v1/throughput": {http.MethodGet: n.getThroughput, http.MethodPost: n.postThroughput},
		"/v1/load":       {http.MethodGet: n.getLoad},
		"/v1/ring":       {http.MethodGet: n.getRing},
		"/v1/ops":        {http.MethodGet: n.getOps},
		"/v1/ops/bootstrap": {http.MethodPost: n.postOp(func(*http.Request) (OpStatus, error) {
			return n.StartBootstrap()
		})},
		"/v1/ops/decommission": {http.MethodPost: n.postOp(func(*http.Request) (OpStatus, error) {
			return n.StartDecommission()
		})},
		"/v1/ops/move": {http.MethodPost: n.postOp(func(r *http.Request) (OpStatus, error) {
			var req MoveRequest
			if err := decodeStrict(r.Body, &req); err != nil {
				return OpStatus{}, badRequest{err}
			}
			t, err := strconv.ParseInt(req.Token, 10, 64)
			if err != nil || t == math.MinInt64 {
				return OpStatus{}, badRequest{fmt.Errorf("token %q: want a Murmur3 token (a signed 64-bit integer above the minimum)", req.Token)}
			}
			return n.StartMove(t)
		})},
		"/v1/ops/cleanup": {http.MethodPost: n.postOp(func(r *http.Request) (OpStatus, error) {
			var req CleanupRequest
			if err := decodeStrict(r.Body, &req); err != nil {
				return OpStatus{}, badRequest{err}
			}
			return n.StartCleanup(req)
		})},
		"/v1/ops/import": {http.MethodPost: n.postOp(func(r *http.Request) (OpStatus, error) {
			var req ImportRequest
			if err := decodeStrict(r.Body, &req); err != nil {
				return OpStatus{}, badRequest{err}
			}
			return n.StartImport(req)
		})},
		"/v1/ops/repair": {http.MethodPost: n.postOp(func(r *http.Request) (OpStatus, error) {
			var req RepairRequest
			if err := decodeStrict(r.Body, &req); err != nil {
				return OpStatus{}, badRequest{err}
			}
			return n.StartRepair(req)
		})},
		"/v1/ops/replace": {http.MethodPost: n.postOp(func(*http.Request) (OpStatus, error) {
			return n.StartReplace()
		})},
		"/v1/ops/rebuild": {http.MethodPost: n.postOp(func(r *http.Request) (OpStatus, error) {
			var req RebuildRequest
			if err := decodeStrict(r.Body, &req); err != nil {
				return OpStatus{}, badRequest{err}
			}
			return n.StartRebuild(req)
		})},
		"/v1/ops/fetch":   {http.MethodPost: n.postFetch},
		"/v1/repair/tree": {http.MethodGet: n.postTree, http.MethodPost: n.postTree},
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		methods, ok := routes[r.URL.Path]
		if !ok {
			writeError(w, http.StatusNotFound, fmt.Sprintf("no such endpoint %s", r.URL.Path))
			return
		}
		h, ok := methods[r.Method]
		if !ok {
			allowed := make([]string, 0, len(methods))
			for m := range methods {
				allowed = append(allowed, m)
			}
			sort.Strings(allowed)
			w.Header().Set("Allow", strings.Join(allowed, ", "))
			writeError(w, http.StatusMethodNotAllowed, fmt.Sprintf("%s %s: want %s", r.Method, r.URL.Path, strings.Join(allowed, " or ")))
			return
		}
		h(w, r)
	})
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

// postFetch runs a fetch for another node's operation; it answers when the fetch is done. The
// fetch stops when the caller goes away or the node stops.
func (n *Node) postFetch(w http.ResponseWriter, r *http.Request) {
	var req FetchOpRequest
	if err := decodeStrict(http.MaxBytesReader(w, r.Body, maxRequestBody), &req); err != nil {
		writeError(w, http.StatusBadRequest, "bad fetch request: "+err.Error())
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	stop := context.AfterFunc(n.runCtx, cancel)
	defer stop()
	res, err := n.Fetch(ctx, req)
	if err != nil {
		writeError(w, http.StatusBadGateway, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, res)
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
