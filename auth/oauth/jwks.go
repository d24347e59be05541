package oauth

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// How long fetched keys are used before they are fetched again, and how
// often at most an unknown key id makes toolhub fetch them early (a key
// rotation at the issuer; not more, so tokens with made-up key ids cannot
// make toolhub hammer the issuer).
const (
	keysTTL        = 10 * time.Minute
	minRefetch     = 30 * time.Second
	maxJWKSBytes   = 1 << 20
	fetchTimeoutIn = 10 * time.Second
)

// After a failed fetch no token makes toolhub fetch the issuer's keys again
// for a while: backoffMin after the first failure, doubling with each
// failure in a row up to backoffMax. A token that needs a key toolhub does
// not have waits at most maxKeyWait for a fetch in flight; a token whose
// key is cached never waits.
const (
	backoffMin = time.Second
	backoffMax = minRefetch
	maxKeyWait = 2 * time.Second
)

// keySet is one issuer's signing keys, fetched on first use and cached.
// At most one fetch is in flight: the tokens that need it share its
// result, and nothing waits on the mutex while it runs.
type keySet struct {
	issuer string
	client *http.Client
	now    func() time.Time

	mu       sync.Mutex                  // guards the fields below; never held while fetching
	jwksURL  string                      // "" until discovered
	keys     map[string]crypto.PublicKey // by kid ("" for a key without one)
	fetched  time.Time                   // when keys were fetched
	tried    time.Time                   // when the last fetch started
	failures int                         // fetches failed in a row
	retryAt  time.Time                   // no fetch before this, after a failure
	lastErr  error                       // of the last fetch
	inflight *fetchCall                  // the fetch running, or nil
}

// fetchCall is one fetch of the keys; done is closed when it has ended
// and its outcome is in the keySet (err is its error).
type fetchCall struct {
	done chan struct{}
	err  error
}

// key returns the key kid of the issuer.
func (s *keySet) key(ctx context.Context, kid string) (crypto.PublicKey, error) {
	s.mu.Lock()
	now := s.now()
	k, have := s.lookup(kid)
	stale := s.keys == nil || now.Sub(s.fetched) >= keysTTL
	c := s.inflight
	if c == nil && (stale || !have && now.Sub(s.tried) >= minRefetch) && !now.Before(s.retryAt) {
		c = s.start(ctx, now)
	}
	if have {
		// A cached key is used at once, stale or not: a refresh runs in
		// the background, and the keys stay in use while the issuer is
		// unreachable.
		s.mu.Unlock()
		return k, nil
	}
	if c == nil {
		err := s.refusal(kid, now)
		s.mu.Unlock()
		return nil, err
	}
	s.mu.Unlock()

	t := time.NewTimer(maxKeyWait)
	defer t.Stop()
	select {
	case <-c.done:
	case <-t.C:
		return nil, fmt.Errorf("issuer %q: its keys are still being fetched (over %s); try again in a moment", s.issuer, maxKeyWait)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if k, ok := s.lookup(kid); ok {
		return k, nil
	}
	return nil, s.refusal(kid, s.now())
}

// lookup returns the cached key kid (or the only key, for a token that
// names none). s.mu is held.
func (s *keySet) lookup(kid string) (crypto.PublicKey, bool) {
	if k, ok := s.keys[kid]; ok {
		return k, true
	}
	if kid == "" && len(s.keys) == 1 {
		for _, k := range s.keys {
			return k, true
		}
	}
	return nil, false
}

// refusal says why there is no key kid. s.mu is held.
func (s *keySet) refusal(kid string, now time.Time) error {
	if s.keys == nil && s.lastErr != nil {
		if wait := s.retryAt.Sub(now); wait > 0 {
			return fmt.Errorf("%w (toolhub fetches them again in %s at the earliest)", s.lastErr, wait.Round(100*time.Millisecond))
		}
		return s.lastErr
	}
	if s.keys == nil {
		return fmt.Errorf("issuer %q: its keys have not been fetched yet; try again in a moment", s.issuer)
	}
	return fmt.Errorf("issuer %q publishes no key %q", s.issuer, kid)
}

// start starts a fetch of the keys and returns it. It runs apart from the
// request that started it (that request's end does not cancel the fetch
// the others wait on), bounded by fetchTimeoutIn. s.mu is held.
func (s *keySet) start(ctx context.Context, now time.Time) *fetchCall {
	c := &fetchCall{done: make(chan struct{})}
	s.inflight, s.tried = c, now
	jwksURL := s.jwksURL
	go func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), fetchTimeoutIn)
		defer cancel()
		u, keys, err := s.fetch(ctx, jwksURL)
		s.mu.Lock()
		now := s.now()
		if u != "" {
			s.jwksURL = u
		}
		if err == nil {
			s.keys, s.fetched = keys, now
			s.failures, s.retryAt, s.lastErr = 0, time.Time{}, nil
		} else {
			s.failures++
			s.retryAt, s.lastErr = now.Add(backoff(s.failures)), err
		}
		s.inflight, c.err = nil, err
		s.mu.Unlock()
		close(c.done)
	}()
	return c
}

// backoff is how long no fetch is made after n failures in a row.
func backoff(n int) time.Duration {
	d := backoffMin
	for i := 1; i < n && d < backoffMax; i++ {
		d *= 2
	}
	return min(d, backoffMax)
}

// fetch gets the issuer's keys from jwksURL, discovering it first when it
// is "". It returns the URL it used.
func (s *keySet) fetch(ctx context.Context, jwksURL string) (string, map[string]crypto.PublicKey, error) {
	if jwksURL == "" {
		u, err := s.discover(ctx)
		if err != nil {
			return "", nil, err
		}
		jwksURL = u
	}
	var set struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := getJSON(ctx, s.client, jwksURL, &set); err != nil {
		return jwksURL, nil, fmt.Errorf("issuer %q: keys: %w", s.issuer, err)
	}
	keys := map[string]crypto.PublicKey{}
	for _, raw := range set.Keys {
		kid, k, err := parseJWK(raw)
		if err != nil {
			continue // a key of a kind toolhub does not use (e.g. for encryption)
		}
		keys[kid] = k
	}
	if len(keys) == 0 {
		return jwksURL, nil, fmt.Errorf("issuer %q: %s has no signing key toolhub can use (RSA, EC P-256/384/521 or Ed25519)", s.issuer, jwksURL)
	}
	return jwksURL, keys, nil
}

// discover finds the issuer's jwks_uri in its authorization server
// metadata (RFC 8414), or its OpenID Connect configuration.
func (s *keySet) discover(ctx context.Context) (string, error) {
	u, err := url.Parse(s.issuer)
	if err != nil {
		return "", err
	}
	path := strings.TrimSuffix(u.Path, "/")
	candidates := []string{
		u.Scheme + "://" + u.Host + "/.well-known/oauth-authorization-server" + path,
		u.Scheme + "://" + u.Host + path + "/.well-known/openid-configuration",
	}
	var errs []error
	for _, c := range candidates {
		var md struct {
			Issuer  string `json:"issuer"`
			JWKSURI string `json:"jwks_uri"`
		}
		if err := getJSON(ctx, s.client, c, &md); err != nil {
			errs = append(errs, err)
			continue
		}
		if md.Issuer != s.issuer || md.JWKSURI == "" {
			errs = append(errs, fmt.Errorf("%s: issuer %q and jwks_uri %q, want issuer %q and a jwks_uri", c, md.Issuer, md.JWKSURI, s.issuer))
			continue
		}
		return md.JWKSURI, nil
	}
	return "", fmt.Errorf("issuer %q: no metadata with a jwks_uri (set jwks_url in the config): %w", s.issuer, errors.Join(errs...))
}

func getJSON(ctx context.Context, c *http.Client, u string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxJWKSBytes+1))
	if err != nil {
		return fmt.Errorf("GET %s: %v", u, err)
	}
	if len(b) > maxJWKSBytes {
		return fmt.Errorf("GET %s: answer larger than %d bytes", u, maxJWKSBytes)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("GET %s: not JSON: %v", u, err)
	}
	return nil
}

// parseJWK reads one public signing key (RFC 7517/7518/8037).
func parseJWK(raw []byte) (string, crypto.PublicKey, error) {
	var j struct {
		Kty, Kid, Use, Crv, N, E, X, Y string
	}
	if err := json.Unmarshal(raw, &j); err != nil {
		return "", nil, err
	}
	if j.Use != "" && j.Use != "sig" {
		return "", nil, fmt.Errorf("key %q is for %q", j.Kid, j.Use)
	}
	b := func(s string) []byte { v, _ := base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "=")); return v }
	switch j.Kty {
	case "RSA":
		n, e := b(j.N), b(j.E)
		if len(n) < 256 || len(e) == 0 || len(e) > 4 {
			return "", nil, fmt.Errorf("RSA key %q: modulus under 2048 bits or bad exponent", j.Kid)
		}
		return j.Kid, &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: int(new(big.Int).SetBytes(e).Int64())}, nil
	case "EC":
		var curve elliptic.Curve
		switch j.Crv {
		case "P-256":
			curve = elliptic.P256()
		case "P-384":
			curve = elliptic.P384()
		case "P-521":
			curve = elliptic.P521()
		default:
			return "", nil, fmt.Errorf("EC key %q: curve %q", j.Kid, j.Crv)
		}
		size := (curve.Params().BitSize + 7) / 8
		x, y := b(j.X), b(j.Y)
		if len(x) != size || len(y) != size {
			return "", nil, fmt.Errorf("EC key %q: bad coordinates", j.Kid)
		}
		k, err := ecdsa.ParseUncompressedPublicKey(curve, append(append([]byte{4}, x...), y...))
		if err != nil {
			return "", nil, fmt.Errorf("EC key %q: %v", j.Kid, err)
		}
		return j.Kid, k, nil
	case "OKP":
		x := b(j.X)
		if j.Crv != "Ed25519" || len(x) != ed25519.PublicKeySize {
			return "", nil, fmt.Errorf("OKP key %q: want an Ed25519 key", j.Kid)
		}
		return j.Kid, ed25519.PublicKey(x), nil
	}
	return "", nil, fmt.Errorf("key %q: type %q", j.Kid, j.Kty)
}
