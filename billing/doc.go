// Package billing meters tool calls and turns them into money: usage
// events, a versioned price book, an append-only ledger, budgets, and
// reports (usage, invoices, payouts, reconciliation, CloudEvents export).
//
// Every call through the [hub.Gateway] produces one call-outcome [Event]
// (key "<call id>/call", carrying the tenant charge) and one event per
// vendor attempt (key "<call id>/<n>", carrying the vendor payout). The
// keys make every write idempotent: replays never double count. A queued
// call is charged nothing; its job is charged once, when a run produces
// its result (key "<job id>/call", see [Meter.Middleware]). Tiered prices
// count monthly volumes in a [VolumeCounter] (billing/redisvolume shares
// them between hubs).
//
// Wiring, in the order of a call:
//
//	book, _ := billing.NewPriceBook(cfg.Billing)          // prices, versioned by effective date
//	pricer := billing.NewPricer(book, nil)                // monthly volume tiers; Volumes: redisvolume.New(rdb, nil) to share
//	ledger, _ := sqlledger.Open(ctx, "data/ledger.db", nil) // or pgledger.Open
//	meter, _ := billing.NewMeter(ledger, &billing.MeterOptions{Pricer: pricer, SpillDir: "data/spill/usage"})
//	budgets, _ := billing.NewBudgets(cfg.Billing.Budgets, &billing.BudgetOptions{Pricer: pricer}) // Store: redisbudget.New(rdb, nil) to share
//	gw := hub.NewGateway(cat, ups, &hub.Options{
//		Outer: []hub.Middleware{gov.OuterMiddleware(), meter.Middleware()},
//		Call:  []hub.Middleware{budgets.Middleware()},
//	})
//	mux.Handle("GET /v1/reports/", billing.NewHandler(ledger, nil))
//	defer meter.Close() // flushes; then ledger.Close()
//
// [Meter.Record] never waits for the database. It copies the event's line
// into the write-ahead log's pending batch, with no system call; the log's
// writer goroutine writes each batch with one write(2), fsynced per
// [MeterOptions].Sync ([SyncPolicy]), and [Meter.Middleware] lets a call
// return only once its events are written (it then survives a kill -9).
// Record also queues the event for a background writer
// that appends batches (lingering a few milliseconds to batch a quiet
// hub); when the buffer is full or the ledger fails, events go to a
// checksummed, fsynced spill replayed later. [Meter.AttemptMiddleware]
// (innermost Vendor middleware) writes an intent before each vendor
// attempt; after a crash, [NewMeter] replays the log and turns intents
// without an outcome into attempt events with outcome unknown (tenant
// charge 0, payout 0, to reconcile against the vendor's statement), so
// every call a vendor received is in the ledger.
//
// Money is [Micros] (int64 millionths), never a float. See docs/finance.md.
package billing
