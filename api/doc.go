// Package api is toolhub's front door on one HTTP port: MCP (streamable
// HTTP, and stdio with [Server.ServeStdio]) for the whole catalog and one
// virtual MCP server per vendor, the /v1 REST API, and health endpoints.
//
//	srv := api.NewServer(gateway, &api.Options{Vendors: manager.StatusJSON})
//	defer srv.Close()
//	http.ListenAndServe("127.0.0.1:8080", srv)
//
// Every call goes through the [hub.Gateway]. Errors are the gateway's typed
// errors, mapped once here: to HTTP statuses for REST, to JSON-RPC -32602
// for tools/call requests that name an unknown tool or carry arguments that
// fail the schema, and to tool results with isError and
// _meta["toolhub/error"] for failures of a call that started.
package api
