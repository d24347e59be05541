// Package orchestrator is toolhub's embedded planner: it turns a goal into
// tool calls through the [hub.Gateway], so every step is governed like any
// other call (tenant, limits, breakers, budgets, metering) and carries the
// run's id as hub.Call.PlanID.
//
// Three ways to plan, chosen per [Request] by its mode:
//
//   - rules (the offline default, and the fallback when the model is down):
//     configured [Rules] first, else the catalog itself. A goal is split into
//     clauses ("and", "then", "，", "然后", "顺便" …); each clause is matched to
//     the tenant's best-fitting tool or capability over names, titles,
//     descriptions, parameters and configured keywords, with typos one edit
//     away (Chinese is segmented against a dictionary of keywords, a small
//     built-in lexicon and an embedded gazetteer of world places); the
//     arguments are read from the input schema, each only where it fits the
//     parameter's type, enum, pattern and format (dates and times, absolute
//     or relative; currencies; numbers, also in words; identifiers; enum
//     values by name or by description; "key: value"; places; quoted or free
//     text; defaults; "there"/"附近" reuse the last place). A condition
//     ("if it's sunny") is reported, not checked.
//     Steps run in parallel and an [IntegrateTool] step merges them. Clauses
//     nothing fits are reported in [Outcome].Unplanned with the closest tools
//     ([Planner.PlanOffline] plans without running).
//   - llm: the tool loop. The tenant's catalog goes to an OpenAI-compatible
//     model as function specs ([Functions]); every tool call it asks for runs
//     through the gateway (a turn's calls in parallel) and the results, or
//     {"error": {"code", "message"}}, go back to it until it answers or the
//     step budget ([ErrStepBudget]) or time budget ([ErrTimeBudget]) runs out.
//   - plan: the model writes a JSON [Plan]; it is validated and run as a DAG.
//
// Plans are DAGs run by an [Executor]: independent steps in parallel, each
// with its timeout and retries, results passed to dependents through
// {{steps.ID.structured.FIELD}} references, failures degrading (dependents
// see null) or stopping the plan, the caller's deadline on every call.
//
// Wiring, in short:
//
//	client, _ := orchestrator.NewClient(orchestrator.Options{BaseURL: url, Model: "gpt-4o-mini", APIKey: os.Getenv("TOOLHUB_LLM_API_KEY")})
//	p := &orchestrator.Planner{Gateway: gw, Catalog: cat, Model: client}
//	if err := p.Init(); err != nil { … }
//	mux.Handle("POST /v1/plan", &orchestrator.Handler{Planner: p, Tenant: func(r *http.Request) string { return api.TenantFrom(r.Context()) }})
//
// A client follows a run's progress with [Remote] (server-sent events).
package orchestrator
