// Package claim is the envelope of everything a sluice node says about itself over gossip:
// its token set, its metadata (state, stream address, replace intent) and its leave intent.
// A claim names the member it speaks for, carries that member's version of the statement and
// is signed with the key of that member's node certificate, so that a holder of the gossip key
// alone can relay claims but never make one: receivers check the signature against the
// certificate the member proved at its stream address.
//
// Encode, Decode, Sign and Verify are pure functions over bytes; the gossip layer decides whose
// key a claim must verify under and what a valid claim changes.
//
// Encoding (all integers uvarint unless noted):
//
//	kind:u8 name:len+bytes version payload:len+bytes sig:len+bytes
//
// The signature covers Context, the cluster label and every field before sig, so a claim
// cannot be replayed in another cluster, as another kind or under another name or version.
package claim

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
)

// Kinds of claims. The kind is the first byte of every sluice gossip message, so message
// types and claim kinds are one namespace; values are append-only.
const (
	KindTokenChunk uint8 = 1 // a chunk of the member's token set
	KindLeave      uint8 = 2 // the member is leaving gracefully
	KindMeta       uint8 = 3 // the member's node metadata
)

const (
	// Context is the domain separator every signature starts with.
	Context = "sluice gossip claim v1\x00"
	// MaxSigLen bounds a signature: an ASN.1 ECDSA P-384 signature is at most 104 bytes,
	// P-521 139, Ed25519 64. RSA keys (256 bytes and more) do not fit a gossip packet and
	// are refused at Sign.
	MaxSigLen = 144
	// MaxNameLen bounds the member name, as gossip does.
	MaxNameLen = 128
	// Overhead is the largest envelope around a payload of n bytes, minus n.
	Overhead = 1 + binary.MaxVarintLen64 + MaxNameLen + binary.MaxVarintLen64 +
		binary.MaxVarintLen64 + binary.MaxVarintLen64 + MaxSigLen
)

var (
	// ErrMalformed reports bytes that are not a claim envelope.
	ErrMalformed = errors.New("claim: malformed")
	// ErrUnsigned reports a claim without a signature where one is required.
	ErrUnsigned = errors.New("claim: unsigned")
	// ErrBadSignature reports a signature that does not verify under the given key.
	ErrBadSignature = errors.New("claim: signature does not verify")
	// ErrKeyType reports a key type claims cannot use.
	ErrKeyType = errors.New("claim: unsupported key type")
)

// Claim is one statement a member makes about itself. Payload's layout depends on Kind.
type Claim struct {
	Kind    uint8
	Name    string
	Version uint64
	Payload []byte
	Sig     []byte // empty: unsigned (a cluster without certificates)
}

// body appends every field but the signature.
func (c Claim) body(b []byte) []byte {
	b = append(b, c.Kind)
	b = appendBytes(b, []byte(c.Name))
	b = binary.AppendUvarint(b, c.Version)
	return appendBytes(b, c.Payload)
}

// Encode returns the envelope of c, signature included.
func (c Claim) Encode() []byte {
	b := make([]byte, 0, len(c.Payload)+len(c.Name)+len(c.Sig)+4*binary.MaxVarintLen64+1)
	return appendBytes(c.body(b), c.Sig)
}

// signed is the byte string a signature covers.
func (c Claim) signed(label string) []byte {
	b := make([]byte, 0, len(Context)+len(label)+len(c.Payload)+len(c.Name)+4*binary.MaxVarintLen64+1)
	b = append(b, Context...)
	b = appendBytes(b, []byte(label))
	return c.body(b)
}

// Sign signs c with key for the cluster labelled label and returns the signed envelope.
// Keys are ECDSA (what sluice's certificates hold) or Ed25519.
func Sign(key crypto.Signer, label string, c Claim) ([]byte, error) {
	if len(c.Name) > MaxNameLen {
		return nil, fmt.Errorf("%w: name of %d bytes exceeds %d", ErrMalformed, len(c.Name), MaxNameLen)
	}
	msg := c.signed(label)
	var sig []byte
	var err error
	switch key.Public().(type) {
	case *ecdsa.PublicKey:
		d := sha256.Sum256(msg)
		sig, err = key.Sign(rand.Reader, d[:], crypto.SHA256)
	case ed25519.PublicKey:
		sig, err = key.Sign(rand.Reader, msg, crypto.Hash(0))
	default:
		return nil, fmt.Errorf("%w: %T", ErrKeyType, key.Public())
	}
	if err != nil {
		return nil, fmt.Errorf("claim: sign: %w", err)
	}
	if len(sig) > MaxSigLen {
		return nil, fmt.Errorf("%w: signature of %d bytes exceeds %d", ErrKeyType, len(sig), MaxSigLen)
	}
	c.Sig = sig
	return c.Encode(), nil
}

// Verify checks that c was signed by pub for the cluster labelled label.
func Verify(pub crypto.PublicKey, label string, c Claim) error {
	if len(c.Sig) == 0 {
		return ErrUnsigned
	}
	msg := c.signed(label)
	ok := false
	switch k := pub.(type) {
	case *ecdsa.PublicKey:
		d := sha256.Sum256(msg)
		ok = ecdsa.VerifyASN1(k, d[:], c.Sig)
	case ed25519.PublicKey:
		ok = len(k) == ed25519.PublicKeySize && ed25519.Verify(k, msg, c.Sig)
	default:
		return fmt.Errorf("%w: %T", ErrKeyType, pub)
	}
	if !ok {
		return ErrBadSignature
	}
	return nil
}

// Decode parses an envelope. The result does not alias b. It checks the framing only: the
// signature is Verify's business, the payload its kind's.
func Decode(b []byte) (Claim, error) {
	d := decoder{b: b}
	var c Claim
	c.Kind = d.u8()
	name := d.bytes(MaxNameLen)
	c.Name = string(name)
	c.Version = d.uvarint()
	c.Payload = clone(d.bytes(len(b)))
	c.Sig = clone(d.bytes(MaxSigLen))
	if d.err == nil && d.off != len(b) {
		d.fail("trailing bytes")
	}
	if d.err != nil {
		return Claim{}, d.err
	}
	return c, nil
}

func clone(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return append([]byte(nil), b...)
}

func appendBytes(b, v []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(v)))
	return append(b, v...)
}

// decoder is a bounds-checked cursor with a sticky error.
type decoder struct {
	b   []byte
	off int
	err error
}

func (d *decoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: %s at offset %d", ErrMalformed, what, d.off)
	}
}

func (d *decoder) u8() uint8 {
	if d.err != nil {
		return 0
	}
	if d.off >= len(d.b) {
		d.fail("truncated")
		return 0
	}
	d.off++
	return d.b[d.off-1]
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b[d.off:])
	if n <= 0 {
		d.fail("bad varint")
		return 0
	}
	d.off += n
	return v
}

// bytes reads a length-prefixed field of at most limit bytes.
func (d *decoder) bytes(limit int) []byte {
	n := d.uvarint()
	if d.err != nil {
		return nil
	}
	if n > uint64(limit) {
		d.fail(fmt.Sprintf("field of %d bytes exceeds %d", n, limit))
		return nil
	}
	if n > uint64(len(d.b)-d.off) {
		d.fail("truncated")
		return nil
	}
	v := d.b[d.off : d.off+int(n)]
	d.off += int(n)
	return v
}
