package adminapi

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

// StatusError is a non-200 answer of a node's admin API, with the server's message.
type StatusError struct {
	Method, Path, Addr string
	Status             int
	Msg                string
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("%s %s on %s: %d %s: %s", e.Method, e.Path, e.Addr, e.Status, http.StatusText(e.Status), e.Msg)
}

// maxAdminAnswer bounds what a client reads of an admin answer.
const maxAdminAnswer = 64 << 20

// Client is the one typed client of the admin API, used by the CLI and the test
// cluster. It sends the node's admin token with every request.
type Client struct {
	Addr      string // host:port
	Base      string // http://host:port
	HTTP      *http.Client
	Token     string
	tokenFile string
	// TokenErr is why no token could be read; requests go without one, and the node's 401
	// answer names this error.
	TokenErr error
}

// NewClient is a client of the admin API at addr (host:port) with the token of
// tokenFile: "" means $SLUICE_ADMIN_TOKEN_FILE, else DefaultTokenFile(addr), where the
// node on this host keeps it. A token that cannot be read is kept as TokenErr, so that an
// unreachable node is still reported as such.
func NewClient(addr, tokenFile string, hc *http.Client) *Client {
	tok, err := Token(addr, tokenFile)
	if hc == nil {
		hc = &http.Client{}
	}
	return &Client{Addr: addr, Base: "http://" + addr, HTTP: hc, Token: tok, tokenFile: tokenFile, TokenErr: err}
}

// AdminToken reads the admin token for the node at addr (see NewClient).
func Token(addr, tokenFile string) (string, error) {
	if tokenFile == "" {
		tokenFile = os.Getenv(TokenEnv)
	}
	if tokenFile == "" {
		var err error
		if tokenFile, err = DefaultTokenFile(addr); err != nil {
			return "", err
		}
	}
	tok, err := readToken(tokenFile)
	if err != nil {
		return "", fmt.Errorf("%w (the node at %s writes it on start; run sluice as the node's user on its host, or set %s)", err, addr, TokenEnv)
	}
	return tok, nil
}

// Call sends a JSON request (body may be nil; a POST always carries a JSON body, {} when
// nil) and decodes the JSON answer into out (which may be nil). A non-200 answer is an
// *StatusError naming the address; a transport failure is returned as the client gave it (its
// URL names the address); an unreadable answer names the request.
func (c *Client) Call(ctx context.Context, method, path string, body, out any) error {
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
		c.Token, c.TokenErr = Token(c.Addr, c.tokenFile)
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
		return &StatusError{Method: method, Path: path, Addr: c.Addr, Status: resp.StatusCode, Msg: e.Error}
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("%s %s: bad answer: %w", method, path, err)
	}
	return nil
}

// Call is Client.Call for the node at base (http://host:port), with the token
// found as NewClient finds it.
func Call(ctx context.Context, hc *http.Client, base, method, path string, body, out any) error {
	return NewClient(strings.TrimPrefix(base, "http://"), "", hc).Call(ctx, method, path, body, out)
}
