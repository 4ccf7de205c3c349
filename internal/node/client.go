package node

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// AdminError is a non-200 answer of a node's admin API, with the server's message.
type AdminError struct {
	Method, Path, Addr string
	Status             int
	Msg                string
}

func (e *AdminError) Error() string {
	return fmt.Sprintf("%s %s on %s: %d %s: %s", e.Method, e.Path, e.Addr, e.Status, http.StatusText(e.Status), e.Msg)
}

// maxAdminAnswer bounds what a client reads of an admin answer.
const maxAdminAnswer = 64 << 20

// CallAdmin sends a JSON request (body may be nil) to the admin API at base (http://host:port)
// and decodes the JSON answer into out (which may be nil). A non-200 answer is an *AdminError
// (naming the address); a transport failure is returned as the client gave it (its URL names
// the address); an unreadable answer names the request, and the caller adds the address. Every admin client — peers calling
// each other, the CLI, the test cluster — goes through it.
func CallAdmin(ctx context.Context, c *http.Client, base, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, base+path, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxAdminAnswer))
	if err != nil {
		return fmt.Errorf("%s %s: reading the answer: %w", method, path, err)
	}
	if resp.StatusCode != http.StatusOK {
		var e ErrorResponse
		if json.Unmarshal(b, &e) != nil || e.Error == "" {
			e.Error = strings.TrimSpace(string(b))
		}
		return &AdminError{Method: method, Path: path, Addr: strings.TrimPrefix(base, "http://"), Status: resp.StatusCode, Msg: e.Error}
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("%s %s: bad answer: %w", method, path, err)
	}
	return nil
}
