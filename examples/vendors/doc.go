// Package vendors provides toolhub's example vendors: real MCP servers
// (mcp-go) with deterministic fake data, fault knobs and call counters, for
// demos, drills and tests that need an upstream to misbehave on cue.
//
//	| vendor    | tool               | input                              | structuredContent                                              |
//	|-----------|--------------------|------------------------------------|----------------------------------------------------------------|
//	| weather-a | current_weather    | city, units?                       | city, temp_c, temp_f?, condition, humidity, observed_at        |
//	| weather-b | current_weather    | location, units?                   | location, temperature, units, condition, humidity, observed_at |
//	| maps      | route              | from, to, mode?                    | distance_km, duration_min, mode, steps                         |
//	| places    | search_restaurants | near, cuisine?, limit? (1..20)     | results: [{name, rating, address, cuisine}]                    |
//	| doubao    | generate_image     | prompt, size? (512x512, 1024x1024) | image_id, width, height, images + a PNG image block            |
//	| sd        | txt2img            | text, width?, height? (64..1024)   | seed, width, height, images + a PNG image block                |
//
// Answers depend only on the arguments (hashed), apart from observed_at;
// weather-a and weather-b report the same weather under different names, so
// a capability that maps one onto the other gives the same answer. Input
// schemas forbid unknown arguments and the server validates them.
//
// # Serving
//
//	v, _ := vendors.New(vendors.Doubao, nil)   // or &vendors.Options{Knobs: …}
//	defer v.Close()
//	h, _ := vendors.Handler(vendors.HTTP, v)   // /mcp and /_control
//	srv := httptest.NewServer(h)               // or http.Serve
//	// several vendors: vendors.Handler(vendors.HTTP, a, b, …) serves each
//	// under /<name>/mcp and /<name>/_control, and lists them at GET /.
//	// SSE: vendors.SSE serves <prefix>/sse and <prefix>/message.
//	// stdio: server.NewStdioServer(v.MCPServer()).Listen(ctx, os.Stdin, os.Stdout)
//
// The command examples/cmd/vendor wraps this: `vendor --all --addr 127.0.0.1:9100`.
//
// # Faults
//
// [Knobs] set the fault [Mode] (ok, fail, slow, hang, garbage, http500,
// http429), a latency added to every call, the fraction of calls faulted
// (spread evenly and deterministically, not at random), the Retry-After of
// http429, and the visible tools. http500 and http429 are answered by an
// HTTP middleware in front of MCP and hit only tools/call POSTs, so
// initialize and tools/list keep working; off HTTP they become JSON-RPC
// errors. Changing the visible tools sends notifications/tools/list_changed.
//
// Knobs change at runtime with [Vendor.SetKnobs] or over HTTP:
//
//	POST /<vendor>/_control {"mode": "http429", "retry_after": "2s"}   # fields present are changed
//	POST /<vendor>/_control {"mode": "ok", "fail_rate": 0.5, "latency": "200ms"}
//	POST /<vendor>/_control {"tools": []}                             # hide every tool; list them to show again
//	POST /<vendor>/_control {"reset": true}                           # zero counters, forget calls
//	GET  /<vendor>/_control                                           # knobs, all_tools, counters, calls
//
// Both answer {"vendor", "knobs", "all_tools", "counters", "calls"}; a bad
// value is a 400 with {"error"} and changes nothing.
//
// # Counters
//
// Every tools/call received is counted, by tool, whether answered at the
// HTTP or the MCP layer ([Counters]), and the last 100 are recorded with
// their argument keys (never values) and the _meta the caller sent ([Call]),
// so a test can prove a call reached a vendor exactly once, or that some
// data never reached it.
//
// # Idempotency
//
// A call whose _meta carries "toolhub/idempotency_key" (toolhub's job
// workers send the job id) is completed once per key: the vendor remembers
// the last [RememberedKeys] keys that completed without an error with their
// results, answers a repeated key from the remembered result without
// running the tool again, and counts each key once in
// Counters.UniqueCompleted (answers from memory in Counters.Replayed, and
// every call with a key received before, even one still running, in
// Counters.Repeated). So "a job completes exactly once, counted at the
// vendor" is checkable.
package vendors
