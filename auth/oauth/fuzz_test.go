package oauth

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// FuzzVerify: whatever a caller sends as a bearer token, Verify answers
// ErrInvalidToken (or a principal for a token the issuer signed) and never
// panics; JWK parsing of whatever an issuer serves never panics either.
func FuzzVerify(f *testing.F) {
	ti := newTestIssuer(f, "k1")
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	v, err := New(Config{Resource: "https://hub.test/mcp", Issuers: []Issuer{{Issuer: "https://issuer.test", JWKSURL: ti.srv.URL, Tenant: "acme"}}},
		&Options{Now: func() time.Time { return now }})
	if err != nil {
		f.Fatal(err)
	}
	good := ti.signF(f, "k1", jwt.MapClaims{"iss": "https://issuer.test", "aud": "https://hub.test/mcp", "exp": now.Add(time.Hour).Unix()})
	for _, s := range []string{good, "", "a.b.c", "thk_x", good[:len(good)-3], "eyJhbGciOiJub25lIn0.e30.", `{"kty":"RSA","n":"AQAB","e":"AQAB"}`,
		`{"kty":"EC","crv":"P-256","x":"AA","y":"AA"}`, `{"kty":"OKP","crv":"Ed25519","x":"AAAA"}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if _, err := v.Verify(context.Background(), s); err != nil && !errors.Is(err, ErrInvalidToken) {
			t.Errorf("Verify(%q): %v, not ErrInvalidToken", s, err)
		}
		_, _, _ = parseJWK([]byte(s))
	})
}
