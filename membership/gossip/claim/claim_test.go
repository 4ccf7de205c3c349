package claim

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"testing"
)

func ecKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

var sample = Claim{Kind: KindTokenChunk, Name: "n2", Version: 1 << 60, Payload: []byte{1, 2, 3, 4}}

func TestASignedClaimVerifiesUnderItsKeyOnly(t *testing.T) {
	k, other := ecKey(t), ecKey(t)
	msg, err := Sign(k, "prod", sample)
	if err != nil {
		t.Fatal(err)
	}
	c, err := Decode(msg)
	if err != nil {
		t.Fatal(err)
	}
	if c.Kind != sample.Kind || c.Name != sample.Name || c.Version != sample.Version || !bytes.Equal(c.Payload, sample.Payload) {
		t.Fatalf("round trip: %+v", c)
	}
	if err := Verify(&k.PublicKey, "prod", c); err != nil {
		t.Fatalf("own key: %v", err)
	}
	if err := Verify(&other.PublicKey, "prod", c); !errors.Is(err, ErrBadSignature) {
		t.Fatalf("another member's key: %v, want ErrBadSignature", err)
	}
	if err := Verify(&k.PublicKey, "staging", c); !errors.Is(err, ErrBadSignature) {
		t.Fatalf("another cluster's label: %v, want ErrBadSignature", err)
	}
}

// Every signed field is bound: changing the kind, the name, the version or one payload byte
// of a signed claim makes it fail, so a relay can neither re-address nor re-version a claim.
func TestEverySignedFieldIsBound(t *testing.T) {
	k := ecKey(t)
	msg, err := Sign(k, "prod", sample)
	if err != nil {
		t.Fatal(err)
	}
	good, _ := Decode(msg)
	for name, mutate := range map[string]func(*Claim){
		"kind":    func(c *Claim) { c.Kind = KindLeave },
		"name":    func(c *Claim) { c.Name = "n1" },
		"version": func(c *Claim) { c.Version++ },
		"payload": func(c *Claim) { c.Payload = []byte{1, 2, 3, 5} },
		"unsigned": func(c *Claim) {
			c.Sig = nil
		},
	} {
		c := good
		c.Payload = append([]byte(nil), good.Payload...)
		mutate(&c)
		if err := Verify(&k.PublicKey, "prod", c); err == nil {
			t.Errorf("%s changed: still verifies", name)
		}
	}
}

func TestEd25519KeysSignToo(t *testing.T) {
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	msg, err := Sign(priv, "l", sample)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := Decode(msg)
	if err := Verify(pub, "l", c); err != nil {
		t.Fatal(err)
	}
}

func TestRSAKeysAreRefused(t *testing.T) {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Sign(k, "l", sample); !errors.Is(err, ErrKeyType) {
		t.Fatalf("got %v, want ErrKeyType", err)
	}
	if err := Verify(&k.PublicKey, "l", Claim{Sig: []byte{1}}); !errors.Is(err, ErrKeyType) {
		t.Fatalf("got %v, want ErrKeyType", err)
	}
}

func TestAClaimFitsItsOverhead(t *testing.T) {
	c := sample
	c.Name = string(bytes.Repeat([]byte("n"), MaxNameLen))
	c.Version = ^uint64(0)
	msg, err := Sign(ecKey(t), "l", c)
	if err != nil {
		t.Fatal(err)
	}
	if len(msg) > Overhead+len(c.Payload) {
		t.Fatalf("envelope of %d bytes exceeds Overhead %d + payload %d", len(msg), Overhead, len(c.Payload))
	}
}

func TestDecodeRejectsEveryTruncationAndTrailingBytes(t *testing.T) {
	msg, err := Sign(ecKey(t), "l", sample)
	if err != nil {
		t.Fatal(err)
	}
	for i := range len(msg) {
		if _, err := Decode(msg[:i]); !errors.Is(err, ErrMalformed) {
			t.Fatalf("truncated at %d: %v", i, err)
		}
	}
	if _, err := Decode(append(msg, 0)); !errors.Is(err, ErrMalformed) {
		t.Fatalf("trailing byte: %v", err)
	}
}

func TestDecodeRejectsOversizedNamesAndSignatures(t *testing.T) {
	long := Claim{Kind: 1, Name: string(bytes.Repeat([]byte("x"), MaxNameLen+1))}
	if _, err := Decode(long.Encode()); !errors.Is(err, ErrMalformed) {
		t.Fatalf("long name: %v", err)
	}
	big := Claim{Kind: 1, Name: "n", Sig: make([]byte, MaxSigLen+1)}
	if _, err := Decode(big.Encode()); !errors.Is(err, ErrMalformed) {
		t.Fatalf("long signature: %v", err)
	}
}

// FuzzDecode: no input panics, whatever decodes survives a re-encoding unchanged, and no
// statement verifies under a key that did not sign it.
func FuzzDecode(f *testing.F) {
	k := ecKey(f)
	msg, _ := Sign(k, "l", sample)
	f.Add(msg)
	f.Add([]byte{1, 0, 0, 0, 0})
	f.Add(Claim{Kind: 3, Name: "n1", Version: 7, Payload: []byte("meta")}.Encode())
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := Decode(b)
		if err != nil {
			return
		}
		again, err := Decode(c.Encode())
		if err != nil || again.Kind != c.Kind || again.Name != c.Name || again.Version != c.Version ||
			!bytes.Equal(again.Payload, c.Payload) || !bytes.Equal(again.Sig, c.Sig) {
			t.Fatalf("re-encoding changed the claim: %v", err)
		}
		signed := c.Kind == sample.Kind && c.Name == sample.Name && c.Version == sample.Version &&
			bytes.Equal(c.Payload, sample.Payload)
		if !signed && Verify(&k.PublicKey, "l", c) == nil {
			t.Fatalf("a statement the key never signed verifies")
		}
	})
}

// BenchmarkSignVerify: the CPU a claim costs its signer and each receiver with sluice's
// certificate keys (ECDSA P-256), for a full 800-byte token chunk.
func BenchmarkSignVerify(b *testing.B) {
	k := ecKey(b)
	c := Claim{Kind: KindTokenChunk, Name: "node-1", Version: 1 << 60, Payload: make([]byte, 460)}
	b.Run("sign", func(b *testing.B) {
		for b.Loop() {
			if _, err := Sign(k, "l", c); err != nil {
				b.Fatal(err)
			}
		}
	})
	msg, _ := Sign(k, "l", c)
	signed, _ := Decode(msg)
	b.Run("verify", func(b *testing.B) {
		for b.Loop() {
			if err := Verify(&k.PublicKey, "l", signed); err != nil {
				b.Fatal(err)
			}
		}
	})
}
