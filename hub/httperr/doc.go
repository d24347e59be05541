// Package httperr renders toolhub's typed errors ([hub.Error]) on the
// wire, once for every route: [Status] maps a [hub.Code] to its HTTP
// status, [RPCCode] to its JSON-RPC error code, and [Body] is the one JSON
// shape of an error. A handler returns or passes on a typed error and
// answers it with [Write]:
//
//	j, err := store.Get(ctx, id)
//	if errors.Is(err, ErrNotFound) {
//		err = hub.Errorf(hub.CodeNotFound, "no job %q", id)
//	}
//	if err != nil {
//		httperr.Write(w, r, err, "")
//		return
//	}
//
// An error that is not typed (a store's, a driver's) is answered as 500
// internal with [InternalMessage] and logged with its text under a call
// or request id: no store's error text reaches a client.
//
// The package sits below every HTTP package (api, billing, orchestrator,
// hub/fallback, ui) and imports only hub, so each of them can use it
// without an import cycle. docs/errors.md is the table for clients.
package httperr
