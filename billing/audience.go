package billing

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"slices"
)

// Audience is whose eyes a report is for: it decides which money a report
// shows and which statements may be read ([HandlerOptions].Audience).
type Audience int

const (
	// AudienceAll (finance, operators) sees every column and statement.
	AudienceAll Audience = iota
	// AudienceTenant sees what it is charged: no vendor costs, no margin,
	// no payouts.
	AudienceTenant
	// AudienceVendor sees what it is paid: no tenant prices, no margin, no
	// invoices.
	AudienceVendor
)

// Hidden returns the money fields the audience does not see, in usage
// reports (columns) and exports (CloudEvents data fields).
func (a Audience) Hidden() []string {
	switch a {
	case AudienceTenant:
		return []string{"vendor_cost", "vendor_unit_price", "margin"}
	case AudienceVendor:
		return []string{"tenant_cost", "tenant_unit_price", "margin"}
	}
	return nil
}

// mayRead reports whether the audience may read a statement ("invoice":
// what tenants are charged; "payout": what vendors are paid).
func (a Audience) mayRead(kind string) bool {
	switch a {
	case AudienceTenant:
		return kind == "invoice"
	case AudienceVendor:
		return kind == "payout"
	}
	return true
}

// hiddenColumns returns the indexes in header of the columns named in
// hide, for dropIndexes.
func hiddenColumns(header, hide []string) []int {
	var idx []int
	for i, h := range header {
		if slices.Contains(hide, h) {
			idx = append(idx, i)
		}
	}
	return idx
}

// dropIndexes returns vals without the elements at idx.
func dropIndexes(vals []string, idx []int) []string {
	if len(idx) == 0 {
		return vals
	}
	out := make([]string, 0, len(vals))
	for i, v := range vals {
		if !slices.Contains(idx, i) {
			out = append(out, v)
		}
	}
	return out
}

// withoutFields re-encodes each element of rows (JSON objects) without
// the fields named in hide.
func withoutFields(rows any, hide []string) any {
	if len(hide) == 0 {
		return rows
	}
	b, err := json.Marshal(rows)
	if err != nil {
		return rows
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var out []map[string]any
	if dec.Decode(&out) != nil {
		return rows
	}
	for _, m := range out {
		for _, h := range hide {
			delete(m, h)
		}
	}
	return out
}

// exportCloudEvents is [ExportCloudEvents] without the data fields named
// in hide.
func exportCloudEvents(ctx context.Context, l Ledger, f Filter, w io.Writer, source string, hide []string) error {
	if source == "" {
		source = "toolhub"
	}
	enc := json.NewEncoder(w)
	return l.Query(ctx, f, func(ev Event) error {
		ce := ToCloudEvent(ev, source)
		for _, h := range hide {
			delete(ce.Data, h)
		}
		return enc.Encode(ce)
	})
}
