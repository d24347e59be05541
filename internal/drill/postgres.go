package drill

import (
	"context"
	"fmt"
	"log/slog"
)

// postgresConfig is the hub of the PostgreSQL drill: registry and ledger
// in PostgreSQL, reached through the proxy.
const postgresConfig = `
postgres: %q
postgres_schema: %s
outbound: {allow: ["{{vendors_addr}}"]}
vendors:
  - id: weather-a
    mcp: {transport: http, url: "{{vendors}}/weather-a/mcp"}
    probe: {disabled: true}
governance: {retry: {max: 0}}
`

// PostgresOutage runs weather-a__current_weather at a steady rate through
// a hub whose registry and ledger live in PostgreSQL, cuts PostgreSQL
// (through a proxy) mid-load, holds the outage, restores it and reports:
// when the ledger writes started spilling to the local log, whether calls
// went on (the registry is in memory), how long the spilled events took to
// reach the ledger once it was back, and whether the ledger has every call
// exactly once.
func PostgresOutage(ctx context.Context, opts *OutageOptions) (OutageReport, error) {
	o := opts.defaults()
	rep := OutageReport{Store: "postgres", Rate: o.Rate}
	if o.Vendors == nil {
		return rep, errVendors
	}
	target, err := pgTarget(o.Postgres)
	if err != nil {
		return rep, err
	}
	p, err := NewProxy(target)
	if err != nil {
		return rep, err
	}
	defer p.Close()
	schema := uniqueID("toolhub_drill_")
	defer dropSchema(o.Postgres, schema)
	var next slog.Handler
	if o.Logger != nil {
		next = o.Logger.Handler()
	}
	w := newLogWatch(next)
	l, err := NewLab(ctx, LabOptions{Logger: slog.New(w), Vendors: o.Vendors, Config: fmt.Sprintf(postgresConfig, pgVia(o.Postgres, p.Addr()), schema)})
	if err != nil {
		return rep, err
	}
	defer l.Close()
	drained := func() bool {
		st := l.App.Meter.Stats()
		return st.Spilled > 0 && st.Replayed >= st.Spilled
	}
	err = runOutage(ctx, l, w, p, o, &rep, logLedgerDown, logLedgerBack, drained)
	st := l.App.Meter.Stats()
	rep.Spilled, rep.Replayed = st.Spilled, st.Replayed
	return rep, err
}
