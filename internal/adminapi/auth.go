package adminapi

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"mime"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/sluicedb/sluice/internal/lib/fsx"
)

// The admin API is for the operator on the node's host. Every request must:
//
//   - name this listener in its Host header (a DNS-rebinding page reaches 127.0.0.1 under a
//     name of its own, which is refused);
//   - carry no Origin header (browsers add one to cross-origin requests; no CORS header is
//     ever sent, so a page cannot read an answer either);
//   - carry "Authorization: Bearer TOKEN" with the token of the admin token file, which the
//     node creates with mode 0600 on first start and the CLI reads (so any local user who can
//     read the file, normally the node's own user and root, is the operator);
//   - for a POST (every change is a POST), have Content-Type application/json, which a page
//     cannot send cross-origin without a preflight that is refused.

// TokenEnv names an environment variable that overrides the admin token file the CLI
// and the typed client read (the node reads admin_token_file).
const TokenEnv = "SLUICE_ADMIN_TOKEN_FILE"

// DefaultTokenFile is where a node whose admin API listens on addr keeps its token
// unless admin_token_file says otherwise: sluice/admin-PORT.token in the user's configuration
// directory ($XDG_CONFIG_HOME or ~/.config), so that the CLI run by the same user on the same
// host finds it from the admin address alone.
func DefaultTokenFile(addr string) (string, error) {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("admin address %q: %w", addr, err)
	}
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("admin token file: %w (set admin_token_file)", err)
	}
	return filepath.Join(dir, "sluice", "admin-"+port+".token"), nil
}

// tokenBytes is the token's entropy.
const tokenBytes = 32

// LoadOrCreateToken reads the token file, creating it (and its directory, mode 0700)
// with a fresh random token when it does not exist. A file that others may read or write is
// refused: its token would not identify the operator.
func LoadOrCreateToken(path string) (string, error) {
	tok, err := readToken(path)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return tok, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", fmt.Errorf("admin token file: %w", err)
	}
	var b [tokenBytes]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	tok = hex.EncodeToString(b[:])
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return readToken(path) // another process created it meanwhile
	}
	if err != nil {
		return "", fmt.Errorf("admin token file: %w", err)
	}
	_, werr := f.WriteString(tok + "\n")
	serr := f.Sync()
	if err := errors.Join(werr, serr, f.Close()); err != nil {
		os.Remove(path)
		return "", fmt.Errorf("admin token file %s: %w", path, err)
	}
	// The CLI must find after a crash the token the node served with.
	if err := fsx.SyncDir(filepath.Dir(path)); err != nil {
		return "", fmt.Errorf("admin token file %s: %w", path, err)
	}
	return tok, nil
}

// readToken reads a token file, checking its mode. Errors wrap fs.ErrNotExist when
// there is none.
func readToken(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("admin token file: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("admin token file: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("admin token file %s: not a regular file", path)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("admin token file %s: mode %v lets other users read or change it; chmod 600 it", path, fi.Mode().Perm())
	}
	b := make([]byte, 256)
	k, _ := f.Read(b)
	tok := strings.TrimSpace(string(b[:k]))
	if len(tok) < 32 {
		return "", fmt.Errorf("admin token file %s: no token in it (delete it to have the node make one)", path)
	}
	return tok, nil
}

// hostSet is the Host header values the admin listener answers to.
type hostSet struct {
	names map[string]bool
	port  string
	anyIP bool // bound to every interface: any IP literal with the port
}

func (h hostSet) allows(host string) bool {
	host = strings.ToLower(host)
	if h.names[host] {
		return true
	}
	// A DNS-rebinding page reaches the listener under a name of its own, never under an IP
	// literal, so a listener bound to every interface may answer to any address of the host.
	if ip, port, err := net.SplitHostPort(host); h.anyIP && err == nil && port == h.port && net.ParseIP(ip) != nil {
		return true
	}
	return false
}

// adminHosts are the Host header values the admin listener at addr answers to: its address,
// and for a loopback listener the usual spellings of loopback with its port.
func adminHosts(bound net.Addr, configured string) hostSet {
	host, port, _ := net.SplitHostPort(bound.String())
	hosts := map[string]bool{bound.String(): true}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		hosts[net.JoinHostPort("localhost", port)] = true
		return hostSet{names: hosts, port: port, anyIP: true}
	}
	if h, _, err := net.SplitHostPort(configured); err == nil && h != "" {
		hosts[net.JoinHostPort(h, port)] = true
	}
	if isLoopback(bound.String()) {
		for _, h := range []string{"127.0.0.1", "localhost", "::1"} {
			hosts[net.JoinHostPort(h, port)] = true
		}
	}
	return hostSet{names: hosts, port: port}
}

// guard enforces the admin API's rules (see the top of this file) before h runs.
func guard(token string, hosts hostSet, h http.Handler) http.Handler {
	want := []byte("Bearer " + token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case !hosts.allows(r.Host):
			writeError(w, http.StatusMisdirectedRequest, fmt.Sprintf("Host %q is not this admin API", r.Host))
		case r.Header.Get("Origin") != "" || r.Header.Get("Sec-Fetch-Site") == "cross-site":
			writeError(w, http.StatusForbidden, "cross-origin requests are refused")
		case subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1:
			w.Header().Set("WWW-Authenticate", `Bearer realm="sluice admin"`)
			writeError(w, http.StatusUnauthorized, "missing or wrong admin token (the node's admin token file; sluice reads it on the node's host)")
		case r.Method == http.MethodPost && !isJSON(r.Header.Get("Content-Type")):
			writeError(w, http.StatusUnsupportedMediaType, "a change needs Content-Type: application/json")
		default:
			h.ServeHTTP(w, r)
		}
	})
}

func isJSON(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && mt == "application/json"
}
