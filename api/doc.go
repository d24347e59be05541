// Package api is toolhub's front door on one HTTP port: MCP (streamable
// HTTP, and stdio with [Server.ServeStdio]) for the whole catalog and one
// virtual MCP server per vendor, the /v1 REST API, and health endpoints.
//
//	srv := api.NewServer(gateway, &api.Options{
//		Vendors: func(context.Context) any { return manager.Statuses() }, // GET /v1/vendors; manager: a *servers.Manager
//	})
//	defer srv.Close()
//	http.ListenAndServe("127.0.0.1:8080", srv)
//
// Every call goes through the [hub.Gateway]. Errors are the gateway's typed
// errors, mapped once by package hub/httperr (docs/errors.md): to HTTP
// statuses and the [ErrorBody] for REST, to JSON-RPC -32602
// for tools/call requests that name an unknown tool or carry arguments that
// fail the schema, and to tool results with isError and
// _meta["toolhub/error"] for failures of a call that started.
//
// # The fast path
//
// tools/call and tools/list on both MCP endpoints are answered without
// mcp-go's server when they can be exactly as it would answer them (a
// session it registered, or a stateless 2026-07-28 request it would
// accept; see fastpath.go): the envelope is decoded once, the arguments
// once, the same gateway call runs, and a vendor's result bytes
// ([hub.Result].Raw) go out with _meta["toolhub/provenance"] spliced in.
// Everything else, and every request it cannot answer identically, goes
// to mcp-go. [Options].DisableFastPath turns it off; the tests compare
// both answers.
//
// # Beyond tools
//
// With [Options].Relay (the servers.Manager), /mcp/vendors/{vendor} is
// transparent: the vendor's resources, templates, prompts, completions,
// logging, progress, cancellation and its sampling, elicitation and roots
// requests are relayed between the vendor's session and the calling
// client's (see relay.go), and the capabilities a client sees at
// initialize are the vendor's. /mcp serves every vendor's resources and
// prompts under reversible names: prompts "<vendor>__<name>", resource
// URIs [ScopedURI] "toolhub://<vendor>/<uri>". resources/read and
// prompts/get run through [hub.Gateway.Relay], governed and metered like
// tool calls (the ledger's tool is "resources/read" or "prompts/get").
// GET /v1/resources and GET /v1/prompts list what the tenant may see.
package api
