// Package oauth makes toolhub an OAuth 2.1 resource server, as the MCP
// authorization specification describes: it verifies JWT access tokens
// against the JWKS of the issuers it trusts (the token's audience must be
// toolhub's resource URL, RFC 8707), maps their claims to a tenant and a
// role ([auth.Principal]), and publishes its protected resource metadata
// (RFC 9728) so that MCP clients find the authorization server from the
// WWW-Authenticate header of a 401.
//
//	v, err := oauth.New(cfg, nil)
//	mux.Handle("GET "+oauth.MetadataPrefix, v.MetadataHandler())
//	p, err := v.Verify(ctx, bearerToken) // then act as p
//	w.Header().Set("WWW-Authenticate", v.Challenge())
package oauth
