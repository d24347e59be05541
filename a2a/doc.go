// Package a2a connects toolhub to the Agent2Agent protocol (A2A 1.0, with
// 0.3 peers through a2a-go's a2acompat/a2av0), both ways:
//
//   - a [Manager] takes third-party A2A agents as vendors: it fetches and
//     validates each agent card, serves every skill as a tool
//     "vendor__skill", refreshes the card, and gives the gateway an
//     invoker per vendor that runs a skill as an A2A task;
//   - a [Server] makes toolhub itself an A2A agent: its card lists the
//     catalog's capabilities as skills, and its JSON-RPC endpoint runs a
//     message through the [hub.Gateway] as a task.
//
// # Agents as vendors
//
// A [Manager] implements [hub.Upstreams], like servers.Manager does for
// MCP vendors; the two are combined into one for the gateway:
//
//	cat := registry.NewCatalog()
//	mcp := servers.NewManager(cat, nil)
//	agents := a2a.NewManager(cat, &a2a.Options{Logger: logger})
//	defer agents.Close()
//	ups := hub.UpstreamsFunc(func(id string) (hub.Invoker, bool) {
//		if inv, ok := mcp.Upstream(id); ok {
//			return inv, true
//		}
//		return agents.Upstream(id)
//	})
//	gw := hub.NewGateway(cat, ups, nil)
//
//	// At start and on every reload: each manager takes its own kind.
//	err := errors.Join(mcp.Sync(ctx, vendors), agents.Sync(ctx, vendors))
//
// [Manager.Add] returns at once and fetches the card in the background;
// [Manager.Refresh] fetches it now and returns what is wrong with it (a
// *[CardError]: not reachable, a status other than 200, not JSON, no name,
// no interface URL, no skills). [FetchCard] and [ParseCard] check a card
// without registering anything. A card that turns bad later keeps the
// last good tools; the error shows in [VendorStatus].LastError.
//
// Each skill becomes a tool named by its id, described by the skill (and
// its examples), whose input is an object with "text" (a string, sent as a
// text part) and/or "data" (an object, sent as a data part), as the
// skill's input modes allow. The message carries metadata {"skill": id}
// (A2A has no standard field for it) and a client-chosen context id; the
// a2a-go client sends A2A-Version with every call.
//
// A call streams (SendStreamingMessage) when the card says the agent
// streams, and is a blocking SendMessage otherwise; either way it follows
// the task to a terminal state, polling GetTask when a stream breaks or the
// agent answers early. When the call's context ends first, the task is
// canceled at the agent (CancelTask; found by its context id with
// ListTasks when its id is not known yet). Parts map to MCP content: text
// → text; data → structuredContent plus a JSON text rendering; raw bytes →
// an image, audio, or embedded blob resource by media type; a URL → a
// resource link.
//
// # Errors
//
// A failed, rejected or canceled task, or one that asks for input, is
// upstream_error with the agent's status message; an A2A or JSON-RPC error
// is upstream_error; HTTP 429 is rate_limited (RetryAfter from
// Retry-After); HTTP 5xx and connection failures are unavailable, as is a
// vendor whose card has not been fetched. The cause of an HTTP failure is
// a *[StatusError].
//
// # toolhub as an agent
//
//	srv := a2a.NewServer(gw, cat, &a2a.ServerOptions{Tenant: api.TenantFrom})
//	srv.Routes(mux) // GET /.well-known/agent-card.json, POST /a2a
//
// A message picks its capability by metadata {"skill": name} or by the
// first data part's "tool" field; the data part (or its "arguments") holds
// the arguments. An unknown name or arguments that break the schema are a
// JSON-RPC invalid-params error before any task exists; otherwise the task
// goes submitted → working → completed (one artifact, with the provenance
// in its metadata "toolhub/provenance") or failed (the status message
// carries "toolhub/error": {code, message, vendor, retry_after_ms}).
// SendMessage, SendStreamingMessage, GetTask, ListTasks (per tenant),
// CancelTask (which stops the gateway call), SubscribeToTask and, with
// [ServerOptions].PushNotifications, the push-notification config methods
// are a2a-go's.
//
// Tasks live in a [TaskStore]: in memory by default, or where the jobs
// are, so that they survive a restart: a2a/sqlitetasks (tables in the
// job database file) or a2a/redistasks (shared by instances).
// Both keep push-notification configs too (PushConfigs), pass the SDK
// store's contract (versions for optimistic concurrency, ListTasks by
// tenant, most recently updated first, paged) and list the unfinished
// tasks that follow a job.
//
//	tasks, _ := sqlitetasks.New(ctx, jobStore.DB(), nil) // or redistasks.New(rdb, nil)
//	srv := a2a.NewServer(gw, cat, &a2a.ServerOptions{Tenant: api.TenantFrom,
//		TaskStore: tasks, PushConfigStore: tasks.PushConfigs(), Jobs: queue})
//	_ = srv.Start(ctx) // resume following the jobs of unfinished tasks
//
// # Queued calls are tasks
//
// With [ServerOptions].Jobs, a call the gateway answers "queued" (every
// vendor failed and the capability queues) does not complete: SendMessage
// answers at once with the task working, its metadata "toolhub/job_id"
// naming the job (a stream stays open instead). The task follows the job
// through the queue's event feed, so a job run by another instance counts
// too: working updates while it waits and retries, then completed with
// the job's result as the artifact, failed (the job failed or was
// rejected), or canceled. CancelTask cancels a job that has not started
// (a running one is not cancelable). After a restart, [Server.Start]
// follows the jobs of the stored unfinished tasks again and writes their
// outcome to the store (and to their push-notification configs);
// SubscribeToTask of such a task gives the task now and once it ended.
//
// # Headers
//
// An A2A vendor's spec may carry headers (registry.A2ASpec.Headers,
// "Authorization: Bearer ${AGENT_KEY}"), sent with the card fetch and
// every call, to the card's and the agent interface's hosts only. ${VAR}s
// are expanded through [Options].LookupEnv; the values never show in
// status, errors or logs.
package a2a
