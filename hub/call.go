package hub

import (
	"crypto/rand"
	"encoding/hex"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/toolhub/toolhub/registry"
)

// Priority classes of calls. Interactive traffic goes before batch.
type Priority uint8

const (
	Interactive Priority = iota
	Batch
)

func (p Priority) String() string {
	if p == Batch {
		return "batch"
	}
	return "interactive"
}

// MetaJobID is the Meta key under which a jobs worker runs the call of a
// job (its value is the job's id). It is toolhub's own: the fallback chain
// does not queue such a call again and the meter charges a job once, so
// a client must never set it; the front doors drop it ([ClientMeta]).
const MetaJobID = "toolhub/job_id"

// MetaIdempotencyKey is the Meta key under which a jobs worker gives the
// vendor the job's id as an idempotency key. It is toolhub's own too: a
// key a client chose would reach the vendor unscoped, so two tenants
// sending the same key could be answered each other's results.
const MetaIdempotencyKey = "toolhub/idempotency_key"

// MetaFinal is the key a vendor sets to true in the _meta of a
// CallToolResult with isError true to mark the error final: the tool's
// definitive answer to these arguments (a prompt its policy refuses, a
// city that does not exist), which no retry, later try or other vendor
// of a capability's chain would change. See [Result].Final.
const MetaFinal = "toolhub/final"

// MarkedFinal reports whether a result's _meta marks its error final
// ([MetaFinal] true).
func MarkedFinal(meta map[string]any) bool {
	v, _ := meta[MetaFinal].(bool)
	return v
}

// ClientMeta is the Meta a caller may send: m without the keys reserved for
// toolhub's own calls ([MetaJobID], [MetaIdempotencyKey]), in any case
// ("Toolhub/Idempotency_Key" is dropped too: a vendor may read keys
// without regard to case).
func ClientMeta(m map[string]any) map[string]any {
	reserved := func(k string) bool {
		return strings.EqualFold(k, MetaJobID) || strings.EqualFold(k, MetaIdempotencyKey)
	}
	n := 0
	for k := range m {
		if reserved(k) {
			n++
		}
	}
	if n == 0 {
		return m
	}
	out := make(map[string]any, len(m)-n)
	for k, v := range m {
		if !reserved(k) {
			out[k] = v
		}
	}
	return out
}

// Call is one tool call on its way through the gateway.
type Call struct {
	ID        string         // unique per call; generated when empty
	Tenant    string         // who calls
	Name      string         // catalog name as asked (vendor tool or capability)
	Arguments map[string]any // decoded JSON object; nil means {}
	Meta      map[string]any // the caller's MCP _meta (progress token, …), passed on
	Priority  Priority
	DataLevel int    // privacy level of the data the call carries: 0 public … 3 biometrics/passwords
	PlanID    string // set by the planner
	Start     time.Time

	// Set by the gateway while it routes the call.
	Capability *registry.Capability // when Name named a capability
	Tool       *registry.Tool       // the vendor tool being tried
	Attempt    int                  // 1-based attempt at this vendor tool

	cat *registry.Catalog // set by the gateway, for chain steps

	// checked is the entry [Gateway.PrecheckCall] validated Arguments
	// against; resolve does not validate them again for that same entry.
	checked registry.Entry

	// Trace collects what happened to the call, for provenance and the
	// decision log. Middlewares append to it.
	Trace *Trace

	// Method is the MCP method of a relayed request that is not a tool
	// call (resources/read, prompts/get; see [Gateway.Relay]); "" for a
	// tool call. Params are its params, as the vendor gets them.
	Method string
	Params any

	// Input is the answer of a 2026-07-28 client to a result that asked
	// for input ([Result].Input): the retry of the call with the client's
	// inputResponses and the requestState it echoed (SEP-2322). nil on a
	// first call. Such a call is governed and metered like any, but never
	// answered from or stored in the result cache.
	Input *InputResponses
}

// InputResponses are a retry's multi round-trip params, as the client sent
// them: Responses the inputResponses object, State the requestState of the
// result that asked (toolhub's own wrapping of the vendor's state).
type InputResponses struct {
	Responses []byte // JSON object: request id → the client's answer
	State     string
}

// InputRequired is a 2026-07-28 result that asks the client for input
// before the call can finish (resultType "input_required", SEP-2322):
// Requests is the inputRequests object as the vendor sent it, State the
// requestState toolhub gives the client to echo (it names the vendor and
// tool the answer must go back to, and carries the vendor's own state).
type InputRequired struct {
	Requests []byte // JSON object: request id → {method, params}
	State    string
}

// prechecked reports whether [Gateway.PrecheckCall] validated c's
// arguments against e.
func (c *Call) prechecked(e registry.Entry) bool {
	k := c.checked
	return (k.Tool != nil || k.Capability != nil) && k.Tool == e.Tool && k.Capability == e.Capability && k.Name == e.Name
}

func (c *Call) toolLookup(vendor, tool string) (*registry.Tool, bool) {
	if c.cat == nil {
		return nil, false
	}
	return c.cat.VendorTool(vendor, tool)
}

// NewCallID returns a new 128-bit call id, 32 hex digits: the time in
// milliseconds (48 bits, as in a UUIDv7) and 80 random bits. Ids made
// later sort after ids made earlier (to the millisecond), so the ledger's
// key index, whose keys start with the call id, grows at its end instead
// of rewriting pages all over it; 80 random bits keep an id unguessable.
func NewCallID() string { return newCallID(time.Now()) }

func newCallID(now time.Time) string {
	var b [16]byte
	ms := uint64(now.UnixMilli())
	for i := range 6 {
		b[i] = byte(ms >> (40 - 8*i))
	}
	_, _ = rand.Read(b[6:])
	return hex.EncodeToString(b[:])
}

// Vendor is the id of the vendor being tried, or "".
func (c *Call) Vendor() string {
	if c.Tool == nil {
		return ""
	}
	return c.Tool.Vendor
}

// Result is a tool's answer. Content blocks (text, image, audio, resources,
// resource links) pass through from the vendor unchanged.
type Result struct {
	Content    []mcp.Content
	Structured any  // structuredContent; nil when absent
	IsError    bool // the tool itself reported an error
	// Final, with IsError, says the vendor marked the error final
	// ([MetaFinal]): a capability answers with it instead of falling back
	// (no other vendor, stale answer or queue), and a job fails at once.
	Final      bool
	Provenance Provenance
	// Relayed is the vendor's result of a relayed request (Call.Method).
	Relayed any
	// Raw, when set, is the vendor's CallToolResult object exactly as it
	// came on the wire (JSON, without toolhub's _meta keys). It is the fast
	// path's pass-through: a front door that finds it writes these bytes
	// with provenance spliced into _meta instead of encoding Content again.
	// Content, Structured and IsError still say the same thing. Any step
	// that changes them (a capability's result mapping, redaction, a cache
	// or stale answer built anew) must set Raw to nil.
	Raw []byte
	// Findings are what the vendor's result scan (registry.Vendor
	// ResultScan) flagged in the result's text: the result is marked, not
	// changed, so Raw and Content stay as they are. Front doors render
	// them next to Provenance.
	Findings []Finding
	// Input, when set, says the vendor asks for input (a 2026-07-28 multi
	// round trip) instead of answering: Content is empty, Raw nil. It is
	// not cached, not a tool error, and ends a capability's chain.
	Input *InputRequired
}

// Finding is one span of a result's text that looks like instructions to
// the model rather than data (see package registry/poison for the rules).
type Finding struct {
	Field string `json:"field"` // e.g. "content/0/text"
	Rule  string `json:"rule"`
	Span  string `json:"span"`
}

// Provenance says where an answer came from. It goes on every result.
type Provenance struct {
	Vendor     string  `json:"vendor,omitempty"`
	Tool       string  `json:"tool,omitempty"` // the vendor's own tool name
	Capability string  `json:"capability,omitempty"`
	Attempts   int     `json:"attempts"`           // vendor attempts, all vendors
	LatencyMS  float64 `json:"latency_ms"`         // in toolhub, end to end
	Cached     bool    `json:"cached,omitempty"`   // a fresh cache hit
	Stale      bool    `json:"stale,omitempty"`    // last known good, may not be the latest
	AgeSeconds float64 `json:"age_s,omitempty"`    // age of a cached or stale answer
	Fallback   bool    `json:"fallback,omitempty"` // not the first vendor of the chain
	Queued     bool    `json:"queued,omitempty"`   // accepted as an async job
	JobID      string  `json:"job_id,omitempty"`   // the job to follow
	CallID     string  `json:"call_id"`            // the call's id, for the decision log
}

// Attempt is one try at one vendor tool.
type Attempt struct {
	Vendor    string  `json:"vendor"`
	Tool      string  `json:"tool"`
	Outcome   Outcome `json:"outcome"` // ok, tool_error or an error code ([OutcomeOf])
	LatencyMS float64 `json:"latency_ms"`
	Error     string  `json:"error,omitempty"`
}

// Trace records the attempts and decisions of one call.
type Trace struct {
	Attempts  []Attempt `json:"attempts,omitempty"`
	Decisions []string  `json:"decisions,omitempty"` // "breaker weather-a open", "rate weather-a allowed", …
}

// traceRoom is a Trace with room for a typical call's attempts and
// decisions, so that one allocation holds them all.
type traceRoom struct {
	t Trace
	a [2]Attempt
	d [6]string
}

// newTrace returns an empty Trace whose first attempts and decisions need
// no allocation of their own.
func newTrace() *Trace {
	r := &traceRoom{}
	r.t.Attempts, r.t.Decisions = r.a[:0], r.d[:0]
	return &r.t
}

// Decide notes a decision (nil-safe).
func (t *Trace) Decide(s string) {
	if t != nil {
		t.Decisions = append(t.Decisions, s)
	}
}
