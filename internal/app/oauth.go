package app

import (
	"net/http"
	"reflect"
	"strings"

	"github.com/toolhub/toolhub/auth"
	"github.com/toolhub/toolhub/auth/oauth"
	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/hub/httperr"
	"github.com/toolhub/toolhub/internal/config"
)

// oauthState is the OAuth resource server in force (nil verifier: off).
type oauthState struct {
	cfg      oauth.Config
	verifier *oauth.Verifier
}

// applyOAuth builds the token verifier of cfg; an unchanged block keeps
// the verifier in force (and the issuers' keys it has fetched).
func (a *App) applyOAuth(cfg *config.Config) error {
	c := cfg.Auth.OAuth
	if old := a.oauth.Load(); old != nil && reflect.DeepEqual(old.cfg, c) {
		return nil
	}
	st := &oauthState{cfg: c}
	if c.Enabled() {
		v, err := oauth.New(c, nil)
		if err != nil {
			return err
		}
		st.verifier = v
	}
	a.oauth.Store(st)
	return nil
}

func (a *App) verifier() *oauth.Verifier {
	if st := a.oauth.Load(); st != nil {
		return st.verifier
	}
	return nil
}

// verifyToken verifies a bearer token that is not an API key as an OAuth
// access token. ok is false when OAuth is off or tok is no JWT.
func (a *App) verifyToken(r *http.Request, tok string) (p auth.Principal, ok bool, err error) {
	v := a.verifier()
	if v == nil || strings.HasPrefix(tok, "thk_") || !oauth.LooksLikeJWT(tok) {
		return auth.Principal{}, false, nil
	}
	p, err = v.Verify(r.Context(), tok)
	return p, true, err
}

// challenge is the WWW-Authenticate header of a 401: with OAuth on, it
// names the protected resource metadata (RFC 9728), as MCP clients expect.
func (a *App) challenge() string {
	if v := a.verifier(); v != nil {
		return v.Challenge()
	}
	return ""
}

// oauthMetadata serves the protected resource metadata at the well-known
// path, with and without the resource's path.
func (a *App) oauthMetadata(w http.ResponseWriter, r *http.Request) {
	v := a.verifier()
	if v == nil || r.URL.Path != oauth.MetadataPrefix && r.URL.Path != v.MetadataPath() {
		httperr.Write(w, r, &hub.Error{Code: hub.CodeNotFound,
			Message: "no OAuth protected resource metadata at " + r.URL.Path + " (auth.oauth in the config)"}, "")
		return
	}
	v.MetadataHandler().ServeHTTP(w, r)
}

// oauthPublic reports the metadata requests, which need no credentials.
func oauthPublic(r *http.Request) bool {
	return strings.HasPrefix(r.URL.Path, oauth.MetadataPrefix)
}
