package tlsx

import (
	"errors"
	"io/fs"
	"strings"
)

// ErrInvalidName reports a node name that is not a non-empty run of [A-Za-z0-9._-] forming a
// plain file name and a DNS name (see ValidateName).
var ErrInvalidName = errors.New("tlsx: invalid node name")

// ErrInvalidHost reports a --host that is neither an IP address nor a DNS name.
var ErrInvalidHost = errors.New("tlsx: invalid host")

// ErrExists reports a certificate or key file that would be overwritten without force.
var ErrExists error = &osSentinel{"tlsx: already exists", fs.ErrExist}

// ErrMissing reports a certificate or key file that does not exist. errors.Is(err,
// fs.ErrNotExist) holds as well.
var ErrMissing error = &osSentinel{"tlsx: missing", fs.ErrNotExist}

// ErrBadPEM reports a file that does not start with a PEM block of the expected type.
var ErrBadPEM = errors.New("tlsx: bad PEM")

// ErrBadCertificate reports a certificate or key that does not parse or cannot serve its role
// (a CA certificate that is not a CA, a node certificate without both authentication usages).
var ErrBadCertificate = errors.New("tlsx: bad certificate")

// ErrKeyMismatch reports a private key that does not belong to the certificate beside it.
var ErrKeyMismatch = errors.New("tlsx: private key does not match the certificate")

// ErrNotSignedByCA reports a certificate that does not chain to the cluster CA.
var ErrNotSignedByCA = errors.New("tlsx: not signed by the cluster CA")

// ErrExpired reports a certificate whose NotAfter has passed.
var ErrExpired = errors.New("tlsx: certificate expired")

// ErrNotYetValid reports a certificate whose NotBefore is still in the future.
var ErrNotYetValid = errors.New("tlsx: certificate not yet valid")

// ErrWrongName reports a node certificate whose CommonName is not the node name it was loaded as.
var ErrWrongName = errors.New("tlsx: certificate is for another node")

// ErrUnverifiedPeer reports a connection state without a verified peer certificate chain.
var ErrUnverifiedPeer = errors.New("tlsx: peer certificate not verified")

// osSentinel is a sentinel that also matches an io/fs error with errors.Is.
type osSentinel struct {
	msg string
	fs  error
}

func (e *osSentinel) Error() string { return e.msg }
func (e *osSentinel) Unwrap() error { return e.fs }

// FileError names the file a certificate or key problem was found in.
type FileError struct {
	Path string
	Err  error
}

// Error drops the wrapped sentinel's own "tlsx: " so the message reads "tlsx: PATH: missing ...".
func (e *FileError) Error() string {
	return "tlsx: " + e.Path + ": " + strings.TrimPrefix(e.Err.Error(), "tlsx: ")
}

func (e *FileError) Unwrap() error { return e.Err }

func fileErr(path string, err error) error { return &FileError{Path: path, Err: err} }
