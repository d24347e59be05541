// Package servers connects toolhub to its vendors' MCP servers: it keeps
// one long-lived connection per vendor (a supervised stdio process, a
// streamable HTTP or an SSE client), keeps each vendor's tools in the
// [registry.Catalog], and gives the gateway a [hub.Invoker] per vendor.
//
// A [Manager] implements [hub.Upstreams]:
//
//	cat := registry.NewCatalog()
//	m := servers.NewManager(cat, &servers.Options{
//		Logger:    logger,
//		LookupEnv: os.LookupEnv, // for ${VAR} in url, headers and env
//	})
//	defer m.Close()
//	for _, v := range cfg.Vendors { // MCP vendors
//		if err := m.Add(ctx, v); err != nil { … } // returns at once
//	}
//	gw := hub.NewGateway(cat, m, nil)
//
//	// On SIGHUP, apply the new vendor set; unchanged vendors are untouched.
//	err := m.Sync(ctx, newCfg.Vendors)
//
//	for _, st := range m.Statuses() { … } // state, last error, tools, restarts
//
// # Connections
//
// [Manager.Add] returns at once; each vendor connects on its own goroutine:
// start (spawn the process, or open the HTTP/SSE client), initialize with
// [DefaultProtocolVersion] (2025-11-25; [Options].ProtocolVersion pins
// another, 2026-07-28 included), list the tools, and then serve calls. A vendor's
// state ([VendorStatus]) is connecting, ready, unavailable or disabled.
// A connection that fails or is lost — a stdio process that exits, an SSE
// stream that drops, three connection failures in a row from calls or
// health probes, a legacy HTTP session the vendor forgot — makes the
// vendor unavailable, and it is re-dialled (a stdio process restarted)
// with jittered exponential backoff ([Options.RestartBackoff]). A call to a
// vendor that is not ready fails at once with unavailable, with RetryAfter
// set to the next attempt; nothing waits for a connection.
//
// Stdio vendors get a minimal environment ([Options.InheritEnv], then the
// spec's env with ${VAR} expanded) and run in their own process group,
// which is killed when they are stopped. Values taken from the environment
// are secrets: they are redacted from status, logs and error messages.
//
// # Tools
//
// Tools are listed at every connect and re-listed on
// notifications/tools/list_changed (on 2026-07-28 connections the manager
// holds a subscriptions/listen stream open for it). Paging is followed to
// the end, stopping at a repeated cursor or past [MaxTools]. Schemas are
// registered exactly as the vendor sent them: the raw JSON is kept, since
// mcp-go's decoded mcp.Tool drops top-level schema keywords. A tool whose
// definition does not compile is left out, logged and shown in
// [VendorStatus].Rejected; the vendor's other tools are served.
//
// While a vendor is unavailable its tools stay in the catalog: calls to
// them fail fast with unavailable, so the breaker sees the failure and a
// capability's fallback chain moves on to the next vendor, and nothing
// flaps in clients' tool lists while a vendor restarts. Only
// [Manager.Remove] (or Sync without the vendor) takes its tools out.
//
// # The fast path
//
// A tools/call to a streamable HTTP vendor does not go through mcp-go's
// client: the manager sends a request built from bytes made once per
// connection and per tool on the session mcp-go opened, over pooled
// keep-alive connections (one idle connection per call the vendor may have
// in flight) that it writes to and reads from on the calling goroutine
// (h1.go: net/http's Transport would hand each request to two goroutines),
// reads the answer itself (a JSON body, or an event stream
// whose notifications and server→client requests are relayed as mcp-go
// relays them), and passes the result object's bytes on as
// [hub.Result].Raw, with Content, Structured and IsError decoded from them
// once. On the wire it is the request mcp-go sends; errors are classified
// the same. Calls on a 2026-07-28 connection, and stdio and SSE vendors,
// go through mcp-go ([Options].NoFastPath sends every call there); Raw is
// set there too, from the result's bytes as the transport read them.
//
// # Errors
//
// A failed call is a *[hub.Error]: rate_limited for HTTP 429 (RetryAfter
// from Retry-After), unavailable for HTTP 5xx, a refused or broken
// connection, or a vendor that is not ready; timeout when the attempt's
// deadline passes; upstream_error when the vendor answers with a JSON-RPC
// error or something that cannot be decoded. mcp-go turns HTTP errors into
// text, so the manager's HTTP client records the status and Retry-After of
// each request itself; the error's cause is then a *[StatusError], which
// retry and breaker logic can find with errors.As:
//
//	var s interface {
//		HTTPStatus() int
//		RetryAfter() time.Duration
//	}
//	if errors.As(err, &s) { … s.HTTPStatus() … }
package servers
