package node

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
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

// AdminClient is the one typed client of the admin API, used by the CLI and the test
// cluster. It sends the node's admin token with every request.
type AdminClient struct {
	Addr      string // host:port
	Base      string // http://host:port
	HTTP      *http.Client
	Token     string
	tokenFile string
	// TokenErr is why no token could be read; requests go without one, and the node's 401
	// answer names this error.
	TokenErr error
}

// NewAdminClient is a client of the admin API at addr (host:port) with the token of
// tokenFile: "" means $SLUICE_ADMIN_TOKEN_FILE, else DefaultAdminTokenFile(addr), where the
// node on this host keeps it. A token that cannot be read is kept as TokenErr, so that an
// unreachable node is still reported as such.
func NewAdminClient(addr, tokenFile string, hc *http.Client) *AdminClient {
	tok, err := AdminToken(addr, tokenFile)
	if hc == nil {
		hc = &http.Client{}
	}
	return &AdminClient{Addr: addr, Base: "http://" + addr, HTTP: hc, Token: tok, tokenFile: tokenFile, TokenErr: err}
}

// AdminToken reads the admin token for the node at addr (see NewAdminClient).
func AdminToken(addr, tokenFile string) (string, error) {
	if tokenFile == "" {
		tokenFile = os.Getenv(AdminTokenEnv)
	}
	if tokenFile == "" {
		var err error
		if tokenFile, err = DefaultAdminTokenFile(addr); err != nil {
			return "", err
		}
	}
	tok, err := readAdminToken(tokenFile)
	if err != nil {
		return "", fmt.Errorf("%w (the node at %s writes it on start; run sluice as the node's user on its host, or set %s)", err, addr, AdminTokenEnv)
	}
	return tok, nil
}

// Call sends a JSON request (body may be nil; a POST always carries a JSON body, {} when
// nil) and decodes the JSON answer into out (which may be nil). A non-200 answer is an
// *AdminError naming the address; a transport failure is returned as the client gave it (its
// URL names the address); an unreadable answer names the request.
func (c *AdminClient) Call(ctx context.Context, method, path string, body, out any) error {
	if body == nil && method == http.MethodPost {
		body = struct{}{}
	}
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.Base+path, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.Token == "" {
		// The node may have created its token file since (a client waiting for it to start).
		c.Token, c.TokenErr = AdminToken(c.Addr, c.tokenFile)
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	resp, err := c.HTTP.Do(req)
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
		if resp.StatusCode == http.StatusUnauthorized && c.TokenErr != nil {
			e.Error += ": " + c.TokenErr.Error()
		}
		return &AdminError{Method: method, Path: path, Addr: c.Addr, Status: resp.StatusCode, Msg: e.Error}
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("%s %s: bad answer: %w", method, path, err)
	}
	return nil
}

// CallAdmin is AdminClient.Call for the node at base (http://host:port), with the token
// found as NewAdminClient finds it.
func CallAdmin(ctx context.Context, hc *http.Client, base, method, path string, body, out any) error {
	return NewAdminClient(strings.TrimPrefix(base, "http://"), "", hc).Call(ctx, method, path, body, out)
}
