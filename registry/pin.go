package registry

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Pin policies of a vendor (Vendor.Pin): which differences from a tool's
// pinned version wait for an operator.
const (
	// PinStrict holds any difference in a tool's name, title, description,
	// annotations, input or output schema, and any new tool.
	PinStrict = "strict"
	// PinSchema holds differences in annotations and schemas, and new
	// tools; a new title or description goes live (and is pinned).
	PinSchema = "schema"
	// PinOff pins nothing: what the vendor lists is served.
	PinOff = "off"
)

// PinPolicies are the values Vendor.Pin takes ("" is the default).
var PinPolicies = []string{PinStrict, PinSchema, PinOff}

// States of a [ToolPin].
const (
	PinStatePinned = "pinned" // the version served
	PinStateHeld   = "held"   // a difference waiting for an operator
)

// ToolPin is one tool's pinned version, or a version of it held for an
// operator. A vendor's row with Tool "" and State pinned is its marker: its
// tools have been pinned once, so a tool without a pin is new (held), not
// trusted on first use.
type ToolPin struct {
	Vendor string    `json:"vendor"`
	Tool   string    `json:"tool"`
	State  string    `json:"state"`
	Hash   string    `json:"hash"` // PinHash(Def) when it was stored
	Def    ToolDef   `json:"def"`
	At     time.Time `json:"at"`
	By     string    `json:"by,omitempty"` // who pinned or approved: a key id, "first-use", "config"
	// Reasons say why a held version waits besides being different (a
	// scanner's findings); empty for a pin.
	Reasons []Finding `json:"reasons,omitempty"`
}

// Corrupt reports whether the stored definition no longer hashes to the
// stored hash (edited, truncated, or undecodable in the store).
func (p ToolPin) Corrupt() bool { return p.Tool != "" && PinHash(p.Def) != p.Hash }

// Finding is why a scanner holds a tool: the rule, the field (a path like
// "description" or "inputSchema/properties/city/description") and the text
// at fault.
type Finding struct {
	Rule  string `json:"rule"`
	Field string `json:"field,omitempty"`
	Span  string `json:"span,omitempty"`
}

// ToolText is what a scanner is shown of a tool about to be served.
type ToolText struct {
	Vendor string
	Def    ToolDef
}

// PinStore keeps tool pins and held versions; every [Store] is one. Rows
// are keyed by (vendor, tool, state).
type PinStore interface {
	// PutToolPin stores p, replacing the row with its key.
	PutToolPin(ctx context.Context, p ToolPin) error
	// ToolPins lists a vendor's rows ("" for every vendor's), by vendor,
	// tool and state. A row whose definition does not decode is listed
	// with a zero Def (so it is Corrupt), not refused.
	ToolPins(ctx context.Context, vendor string) ([]ToolPin, error)
	// DeleteToolPin removes one row; a missing row is not an error.
	DeleteToolPin(ctx context.Context, vendor, tool, state string) error
	// DeleteVendorPins removes every row of a vendor.
	DeleteVendorPins(ctx context.Context, vendor string) error
}

// DecodePin reads a stored pin row: its key columns, its hash column
// (hash; "" takes the spec's) and its spec. A spec that does not decode
// gives a pin with a zero Def, which is Corrupt: a damaged row fails
// closed rather than failing every other row's listing.
func DecodePin(vendor, tool, state, hash string, spec []byte) ToolPin {
	var p ToolPin
	if err := json.Unmarshal(spec, &p); err != nil {
		p = ToolPin{Hash: hash}
		if p.Hash == "" {
			p.Hash = "undecodable"
		}
	}
	if hash != "" {
		p.Hash = hash
	}
	for _, r := range []*json.RawMessage{&p.Def.InputSchema, &p.Def.OutputSchema, &p.Def.Annotations} {
		if canonical(*r) == nil {
			*r = nil // written as null: absent, as it was listed
		}
	}
	p.Vendor, p.Tool, p.State = vendor, tool, state
	return p
}

// SortPins orders pins as ToolPins lists them.
func SortPins(ps []ToolPin) {
	slices.SortFunc(ps, func(a, b ToolPin) int {
		if c := strings.Compare(a.Vendor, b.Vendor); c != 0 {
			return c
		}
		if c := strings.Compare(a.Tool, b.Tool); c != 0 {
			return c
		}
		return strings.Compare(a.State, b.State)
	})
}

// PinHash is the canonical hash of what a tool shows a model: its name,
// title, description, annotations, input and output schema, as JSON with
// sorted keys and no insignificant space, hashed with SHA-256. Two
// definitions that differ only in key order or spacing hash alike.
func PinHash(d ToolDef) string {
	return hashCanonical(map[string]any{
		"name": d.Name, "title": d.Title, "description": d.Description,
		"annotations": canonical(d.Annotations), "inputSchema": canonical(d.InputSchema), "outputSchema": canonical(d.OutputSchema),
	})
}

// SchemaHash is PinHash over the annotations and schemas only: what
// pin: schema holds.
func SchemaHash(d ToolDef) string {
	return hashCanonical(map[string]any{
		"name": d.Name, "annotations": canonical(d.Annotations),
		"inputSchema": canonical(d.InputSchema), "outputSchema": canonical(d.OutputSchema),
	})
}

func hashCanonical(v any) string {
	b := canonicalJSON(v)
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// canonicalJSON encodes v with sorted object keys (encoding/json sorts map
// keys) and HTML characters as they are.
func canonicalJSON(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// canonical decodes raw JSON into maps, slices and json.Number (numbers
// kept as written); absent or null is nil; text that is not JSON is kept
// as a string, so it still hashes as itself.
func canonical(raw json.RawMessage) any {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return "invalid JSON: " + string(raw)
	}
	return v
}

// FieldDiff is one difference between a pinned and a held tool: the field
// (a path into the definition, like "description" or
// "inputSchema/properties/city/description"), its old and new text
// (JSON for non-strings; empty when absent), and for text on both sides
// the changed words, marked [-old-]{+new+} with unchanged runs elided.
type FieldDiff struct {
	Field string `json:"field"`
	Old   string `json:"old,omitempty"`
	New   string `json:"new,omitempty"`
	Words string `json:"words,omitempty"`
}

// PinDiff lists field by field how def differs from old (nil: the tool is
// new, and every field it has is listed), in a stable order.
func PinDiff(old *ToolDef, def ToolDef) []FieldDiff {
	flat := func(d *ToolDef) map[string]any {
		m := map[string]any{}
		if d == nil {
			return m
		}
		for _, f := range []struct {
			name string
			v    any
		}{{"name", d.Name}, {"title", d.Title}, {"description", d.Description},
			{"annotations", canonical(d.Annotations)}, {"inputSchema", canonical(d.InputSchema)}, {"outputSchema", canonical(d.OutputSchema)}} {
			flatten(m, f.name, f.v)
		}
		return m
	}
	a, b := flat(old), flat(&def)
	keys := make([]string, 0, len(a)+len(b))
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, compareFields)
	var out []FieldDiff
	for _, k := range keys {
		x, inA := a[k]
		y, inB := b[k]
		if inA && inB && bytes.Equal(canonicalJSON(x), canonicalJSON(y)) {
			continue
		}
		d := FieldDiff{Field: k}
		if inA {
			d.Old = leafText(x)
		}
		if inB {
			d.New = leafText(y)
		}
		xs, ok1 := x.(string)
		ys, ok2 := y.(string)
		if inA && inB && ok1 && ok2 {
			d.Words = WordDiff(xs, ys)
		}
		out = append(out, d)
	}
	return out
}

// compareFields puts the top-level fields in the order a definition shows
// them, then paths by text.
func compareFields(a, b string) int {
	rank := func(s string) int {
		top, _, _ := strings.Cut(s, "/")
		return slices.Index([]string{"name", "title", "description", "annotations", "inputSchema", "outputSchema"}, top)
	}
	if c := rank(a) - rank(b); c != 0 {
		return c
	}
	return strings.Compare(a, b)
}

// flatten puts the leaves of v (strings, numbers, booleans, empty objects
// and arrays) in m under their paths; an empty string or nil is absent.
func flatten(m map[string]any, path string, v any) {
	switch x := v.(type) {
	case nil:
	case string:
		if x != "" {
			m[path] = x
		}
	case map[string]any:
		if len(x) == 0 {
			m[path] = x
		}
		for k, e := range x {
			flatten(m, path+"/"+strings.NewReplacer("~", "~0", "/", "~1").Replace(k), e)
		}
	case []any:
		if len(x) == 0 {
			m[path] = x
		}
		for i, e := range x {
			flatten(m, path+"/"+strconv.Itoa(i), e)
		}
	default:
		m[path] = x
	}
}

func leafText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return string(canonicalJSON(v))
}

// WordDiff shows how text b differs from a word by word: removed words as
// [-…-], added ones as {+…+}, runs of more than six unchanged words cut
// to their first and last three around "…".
func WordDiff(a, b string) string {
	x, y := strings.Fields(a), strings.Fields(b)
	// Longest common subsequence, bounded: texts are at most a few
	// thousand words (registry bounds), and past 4096×4096 cells the
	// whole texts are shown as replaced.
	if len(x)*len(y) > 1<<24 {
		return "[-" + a + "-] {+" + b + "+}"
	}
	n, m := len(x), len(y)
	lcs := make([][]int32, n+1)
	for i := range lcs {
		lcs[i] = make([]int32, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if x[i] == y[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out, same, del, add []string
	flushSame := func(last bool) {
		if len(same) > 6 {
			keep := []string{}
			if len(out) > 0 {
				keep = append(keep, same[:3]...)
			}
			keep = append(keep, "…")
			if !last {
				keep = append(keep, same[len(same)-3:]...)
			}
			same = keep
		}
		out = append(out, same...)
		same = nil
	}
	flushChange := func() {
		if len(del) > 0 {
			out = append(out, "[-"+strings.Join(del, " ")+"-]")
		}
		if len(add) > 0 {
			out = append(out, "{+"+strings.Join(add, " ")+"+}")
		}
		del, add = nil, nil
	}
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && x[i] == y[j]:
			flushChange()
			same = append(same, x[i])
			i, j = i+1, j+1
		case j < m && (i == n || lcs[i][j+1] >= lcs[i+1][j]):
			flushSame(false)
			add = append(add, y[j])
			j++
		default:
			flushSame(false)
			del = append(del, x[i])
			i++
		}
	}
	flushChange()
	flushSame(true)
	return strings.Join(out, " ")
}

// HeldTool is a tool version waiting for an operator, as the admin API
// shows it: the difference from the pinned version (every field, for a new
// tool) and the reasons it waits.
type HeldTool struct {
	Tool    string      `json:"tool"`
	New     bool        `json:"new,omitempty"`     // no pinned version: not listed until approved
	Corrupt bool        `json:"corrupt,omitempty"` // the pin no longer matches its hash: the tool is not served
	Diff    []FieldDiff `json:"diff"`
	Reasons []Finding   `json:"reasons,omitempty"`
	Since   time.Time   `json:"since"`
}

// Summary is one line saying what a held tool changes.
func (h HeldTool) Summary() string {
	fields := make([]string, 0, len(h.Diff))
	for _, d := range h.Diff {
		top, _, _ := strings.Cut(d.Field, "/")
		if !slices.Contains(fields, top) {
			fields = append(fields, top)
		}
	}
	var s string
	switch {
	case h.Corrupt:
		s = fmt.Sprintf("tool %q: its pin is corrupt; not served until approved", h.Tool)
	case h.New:
		s = fmt.Sprintf("tool %q: new; not listed until approved", h.Tool)
	default:
		s = fmt.Sprintf("tool %q: %s changed; the pinned version is served", h.Tool, strings.Join(fields, ", "))
	}
	for _, r := range h.Reasons {
		s += fmt.Sprintf("; %s in %s: %q", r.Rule, r.Field, r.Span)
	}
	return s
}
