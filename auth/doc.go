// Package auth holds toolhub's identities: API keys for tenants (callers),
// vendors (self-service), operators and finance. A key is shown once when it
// is issued; only the SHA-256 of its secret is stored. Keys can expire, be
// rotated (a new secret, the old one revoked) and revoked.
//
//	keys := auth.NewMemoryStore() // or sqlitekeys.Open(ctx, path), or pgkeys.Open(ctx, dsn, nil)
//	tok, k, err := auth.Issue(ctx, keys, auth.Key{Role: auth.RoleTenant, Tenant: "acme"}, 30*24*time.Hour)
//	p, err := auth.Verify(ctx, keys, tok) // Principal{Role, Tenant, Vendor, KeyID}
//
// Tokens look like "thk_<id>_<secret>"; [Redact] hides them in text.
package auth
