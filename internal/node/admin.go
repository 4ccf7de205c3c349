package node

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
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
//
// Unknown paths answer 404 and other methods 405, both with an ErrorResponse.
func (n *Node) handler() http.Handler {
	metrics := promhttp.HandlerFor(n.metrics.Registry, promhttp.HandlerOpts{})
	routes := map[string]map[string]http.HandlerFunc{
		"/metrics":       {http.MethodGet: metrics.ServeHTTP},
		"/v1/status":     {http.MethodGet: n.getStatus},
		"/v1/streams":    {http.MethodGet: n.getStreams},
		"/v1/throughput": {http.MethodGet: n.getThroughput, http.MethodPost: n.postThroughput},
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
