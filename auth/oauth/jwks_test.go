package oauth

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// verifyAll verifies toks at once and returns their errors.
func verifyAll(v *Verifier, toks []string) []error {
	errs := make([]error, len(toks))
	var wg sync.WaitGroup
	for i, tok := range toks {
		wg.Go(func() { _, errs[i] = v.Verify(context.Background(), tok) })
	}
	wg.Wait()
	return errs
}

// TestFailingIssuerIsFetchedOncePerBackoff (issue 32, item 5): 50 tokens
// at once naming an issuer whose keys were never fetched and whose JWKS
// fails make one GET (they made 50), tokens during the backoff make none,
// and the backoff doubles up to its cap. Once the issuer answers again,
// its tokens verify.
func TestFailingIssuerIsFetchedOncePerBackoff(t *testing.T) {
	v, ti, clk := setup(t, Issuer{Tenant: "acme"})
	ti.failing(true)
	claims := func() jwt.MapClaims {
		return jwt.MapClaims{"iss": "https://issuer.test", "aud": "https://hub.test/mcp", "exp": clk.now().Add(time.Hour).Unix()}
	}
	forged := make([]string, 50)
	for i := range forged {
		forged[i] = ti.sign(t, fmt.Sprint("forged-", i), claims())
	}
	for i, err := range verifyAll(v, forged) {
		if !errors.Is(err, ErrInvalidToken) {
			t.Fatalf("forged token %d: %v, want refused", i, err)
		}
	}
	v.settle()
	if n := ti.fetches.Load(); n != 1 {
		t.Fatalf("50 forged tokens against a failing issuer made %d JWKS GETs, want 1", n)
	}
	// During the backoff: refused at once, with the issuer's answer, and no GET.
	for i, err := range verifyAll(v, forged) {
		if !errors.Is(err, ErrInvalidToken) || !strings.Contains(err.Error(), "503") || !strings.Contains(err.Error(), "again in 1s at the earliest") {
			t.Fatalf("forged token %d during the backoff: %v, want the issuer's 503 and when toolhub tries again", i, err)
		}
	}
	if _, err := v.Verify(context.Background(), ti.sign(t, "k1", claims())); err == nil {
		t.Fatal("a valid token verified without the issuer's keys")
	}
	if n := ti.fetches.Load(); n != 1 {
		t.Fatalf("%d JWKS GETs during the backoff, want still 1", n)
	}
	// The backoff doubles after each failure in a row, up to backoffMax.
	want := int32(1)
	for _, d := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 30 * time.Second, 30 * time.Second} {
		clk.advance(d - time.Millisecond)
		verifyAll(v, forged[:5])
		v.settle()
		if n := ti.fetches.Load(); n != want {
			t.Fatalf("%s into a backoff of %s: %d GETs, want %d", d-time.Millisecond, d, n, want)
		}
		clk.advance(time.Millisecond)
		verifyAll(v, forged[:5])
		v.settle()
		if want++; ti.fetches.Load() != want {
			t.Fatalf("a backoff of %s over: %d GETs, want %d", d, ti.fetches.Load(), want)
		}
	}
	// The issuer is back: once the backoff is over, its tokens verify.
	ti.failing(false)
	clk.advance(backoffMax)
	if _, err := v.Verify(context.Background(), ti.sign(t, "k1", claims())); err != nil {
		t.Fatalf("issuer back: %v", err)
	}
}

// TestStaleKeysFailingRefetchBacksOff: an issuer whose keys were fetched
// once and whose refetch keeps failing is asked again once per backoff,
// not once per token, and its cached keys keep working meanwhile.
func TestStaleKeysFailingRefetchBacksOff(t *testing.T) {
	v, ti, clk := setup(t, Issuer{Tenant: "acme"})
	claims := func() jwt.MapClaims {
		return jwt.MapClaims{"iss": "https://issuer.test", "aud": "https://hub.test/mcp", "exp": clk.now().Add(time.Hour).Unix()}
	}
	if _, err := v.Verify(context.Background(), ti.sign(t, "k1", claims())); err != nil {
		t.Fatal(err)
	}
	ti.failing(true)
	clk.advance(keysTTL)
	toks := make([]string, 50)
	for i := range toks {
		toks[i] = ti.sign(t, "k1", claims())
	}
	for range 3 {
		for i, err := range verifyAll(v, toks) {
			if err != nil {
				t.Fatalf("token %d with the cached key, issuer failing: %v", i, err)
			}
		}
		v.settle()
	}
	if n := ti.fetches.Load(); n != 2 {
		t.Fatalf("150 tokens with stale keys and a failing issuer made %d GETs, want 2 (the first fetch, one refetch)", n)
	}
}

// TestCachedKeyNeverWaitsOnAFetch (issue 32, item 5): while a fetch of a
// slow issuer's keys is in flight (started by a token with a made-up key
// id once the keys are stale), a token whose key is cached verifies at
// once; it waited for the fetch (with ten such tokens, 32.5 s).
func TestCachedKeyNeverWaitsOnAFetch(t *testing.T) {
	tr := &inflightTransport{}
	v, ti, clk := setupWith(t, Issuer{Tenant: "acme"}, &http.Client{Transport: tr})
	claims := func() jwt.MapClaims {
		return jwt.MapClaims{"iss": "https://issuer.test", "aud": "https://hub.test/mcp", "exp": clk.now().Add(time.Hour).Unix()}
	}
	good := ti.sign(t, "k1", claims())
	if _, err := v.Verify(context.Background(), good); err != nil {
		t.Fatal(err)
	}
	ti.slow(t)
	clk.advance(keysTTL)
	anon := make([]string, 10)
	for i := range anon {
		anon[i] = ti.sign(t, fmt.Sprint("anon-", i), claims())
	}
	done := make(chan []error)
	go func() { done <- verifyAll(v, anon) }()
	<-ti.held // the refetch has reached the issuer, which does not answer
	for range 3 {
		if _, err := v.Verify(context.Background(), ti.sign(t, "k1", claims())); err != nil {
			t.Fatalf("cached key while a fetch is in flight: %v", err)
		}
	}
	if n := tr.n.Load(); n != 1 {
		t.Fatalf("the valid tokens verified with %d fetches in flight, want 1: they waited for the slow issuer", n)
	}
	if n := ti.fetches.Load(); n != 2 {
		t.Fatalf("%d GETs, want 2: ten anonymous tokens and three valid ones share one refetch", n)
	}
	for i, err := range <-done {
		if !errors.Is(err, ErrInvalidToken) {
			t.Errorf("anonymous token %d: %v", i, err)
		}
	}
}

// TestSlowIssuerDoesNotDelayAnother: a fetch in flight at one issuer
// never delays a token of another.
func TestSlowIssuerDoesNotDelayAnother(t *testing.T) {
	slow, fast := newTestIssuer(t, "s1"), newTestIssuer(t, "f1")
	tr := &inflightTransport{}
	v, err := New(Config{Resource: "https://hub.test/mcp", Issuers: []Issuer{
		{Issuer: "https://slow.test", JWKSURL: slow.srv.URL, Tenant: "acme"},
		{Issuer: "https://fast.test", JWKSURL: fast.srv.URL, Tenant: "acme"},
	}}, &Options{HTTPClient: &http.Client{Transport: tr}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(v.settle)
	slow.slow(t)
	exp := time.Now().Add(time.Hour).Unix()
	done := make(chan error)
	go func() {
		_, err := v.Verify(context.Background(), slow.sign(t, "s1", jwt.MapClaims{"iss": "https://slow.test", "aud": "https://hub.test/mcp", "exp": exp}))
		done <- err
	}()
	<-slow.held
	if _, err := v.Verify(context.Background(), fast.sign(t, "f1", jwt.MapClaims{"iss": "https://fast.test", "aud": "https://hub.test/mcp", "exp": exp})); err != nil {
		t.Fatalf("token of another issuer while one is slow: %v", err)
	}
	if n := tr.n.Load(); n != 1 {
		t.Fatalf("%d fetches in flight when the other issuer's token verified, want 1 (the slow one)", n)
	}
	if err := <-done; !errors.Is(err, ErrInvalidToken) || !strings.Contains(err.Error(), "still being fetched") {
		t.Errorf("token of the slow issuer: %v, want refused after maxKeyWait", err)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestWaitForKeysIsBounded (issue 32, item 5): a token that needs the keys
// of an issuer being fetched waits for the one fetch in flight at most
// maxKeyWait, however many tokens wait with it; it waited the fetch's 10 s
// timeout (in a synctest bubble: the times are exact; one token at a time
// first, as the old code's mutex would stop a bubble's clock). Once the fetch is in, the next token verifies without
// another GET.
func TestWaitForKeysIsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pub, priv, _ := ed25519.GenerateKey(rand.Reader)
		jwks := `{"keys":[{"kty":"OKP","crv":"Ed25519","kid":"k1","x":"` + base64.RawURLEncoding.EncodeToString(pub) + `"}]}`
		release := make(chan struct{})
		var gets atomic.Int32
		client := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
			gets.Add(1)
			select {
			case <-release:
			case <-r.Context().Done():
				return nil, r.Context().Err()
			}
			return &http.Response{StatusCode: 200, Status: "200 OK", Body: io.NopCloser(strings.NewReader(jwks)), Header: http.Header{}, Request: r}, nil
		})}
		v, err := New(Config{Resource: "https://hub.test/mcp", Issuers: []Issuer{{Issuer: "https://issuer.test", JWKSURL: "https://issuer.test/jwks", Tenant: "acme"}}},
			&Options{HTTPClient: client})
		if err != nil {
			t.Fatal(err)
		}
		sign := func(kid string, k ed25519.PrivateKey) string {
			tok := jwt.NewWithClaims(jwt.SigningMethodEdDSA, jwt.MapClaims{"iss": "https://issuer.test", "aud": "https://hub.test/mcp", "exp": time.Now().Add(time.Hour).Unix()})
			tok.Header["kid"] = kid
			s, err := tok.SignedString(k)
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
		start := time.Now()
		_, err = v.Verify(context.Background(), sign("k1", priv))
		if waited := time.Since(start); waited > maxKeyWait || !errors.Is(err, ErrInvalidToken) || !strings.Contains(err.Error(), "still being fetched") {
			t.Fatalf("valid token behind a fetch in flight: %v after %s, want refused after at most %s", err, waited, maxKeyWait)
		}
		// Ten more tokens wait for the same fetch, no longer.
		_, other, _ := ed25519.GenerateKey(rand.Reader)
		anon := make([]string, 10)
		for i := range anon {
			anon[i] = sign(fmt.Sprint("anon-", i), other)
		}
		start = time.Now()
		for i, err := range verifyAll(v, anon) {
			if !errors.Is(err, ErrInvalidToken) || !strings.Contains(err.Error(), "still being fetched") {
				t.Errorf("anonymous token %d: %v", i, err)
			}
		}
		if waited := time.Since(start); waited != maxKeyWait {
			t.Errorf("ten tokens behind the fetch in flight waited %s, want %s", waited, maxKeyWait)
		}
		if n := gets.Load(); n != 1 {
			t.Fatalf("%d GETs for eleven tokens, want 1", n)
		}
		close(release)
		synctest.Wait()
		if _, err := v.Verify(context.Background(), sign("k1", priv)); err != nil {
			t.Fatalf("once the fetch is in: %v", err)
		}
		if n := gets.Load(); n != 1 {
			t.Fatalf("%d GETs, want 1", n)
		}
	})
}
