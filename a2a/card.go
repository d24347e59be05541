package a2a

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"

	sdk "github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"

	"github.com/toolhub/toolhub/registry"
)

// WellKnownCardPath is where an agent serves its card (A2A 1.0 and 0.3).
const WellKnownCardPath = "/.well-known/agent-card.json"

// MaxCardBytes bounds an agent card.
const MaxCardBytes = 1 << 20

// CardError is a card that could not be fetched or is not a usable agent
// card. It names the URL and says what is wrong.
type CardError struct {
	URL    string
	Status int // the HTTP status when the fetch got one that is not 200
	Err    error
}

func (e *CardError) Error() string { return fmt.Sprintf("agent card %s: %v", e.URL, e.Err) }

func (e *CardError) Unwrap() error { return e.Err }

// FetchCard fetches and validates the agent card at cardURL. A URL with
// no path (or "/") means the well-known path under it. Cards in A2A 1.0
// shape (supportedInterfaces) and in 0.3 shape (url, protocolVersion) are
// both accepted; 0.3 interfaces come back with ProtocolVersion "0.3". The
// error is a *CardError that says what is wrong: not reachable, a status
// other than 200, not JSON, or a card without a name, an interface URL or
// skills.
func FetchCard(ctx context.Context, hc *http.Client, cardURL string) (*sdk.AgentCard, error) {
	if hc == nil {
		hc = http.DefaultClient
	}
	u, err := url.Parse(cardURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, &CardError{URL: cardURL, Err: errors.New("not an http(s) URL")}
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = WellKnownCardPath
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, &CardError{URL: cardURL, Err: err}
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set(sdk.SvcParamVersion, string(sdk.Version))
	resp, err := hc.Do(req)
	if err != nil {
		return nil, &CardError{URL: cardURL, Err: fmt.Errorf("not reachable: %w", err)}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxCardBytes+1))
	if err != nil {
		return nil, &CardError{URL: cardURL, Err: fmt.Errorf("reading the card: %w", err)}
	}
	if resp.StatusCode != http.StatusOK {
		return nil, &CardError{URL: cardURL, Status: resp.StatusCode, Err: fmt.Errorf("HTTP status %s, want 200 with the agent card", resp.Status)}
	}
	if len(body) > MaxCardBytes {
		return nil, &CardError{URL: cardURL, Err: fmt.Errorf("card is over %d bytes", MaxCardBytes)}
	}
	if ct := resp.Header.Get("Content-Type"); ct != "" {
		if mt, _, _ := mime.ParseMediaType(ct); mt != "application/json" && !strings.HasSuffix(mt, "+json") {
			return nil, &CardError{URL: cardURL, Err: fmt.Errorf("content type is %q, want application/json (is the card URL right?)", mt)}
		}
	}
	card, err := ParseCard(body)
	if err != nil {
		return nil, &CardError{URL: cardURL, Err: err}
	}
	return card, nil
}

// ParseCard decodes and validates an agent card in 1.0 or 0.3 shape.
func ParseCard(body []byte) (*sdk.AgentCard, error) {
	body = bytes.TrimSpace(body)
	if len(body) == 0 || body[0] != '{' {
		return nil, errors.New("not a JSON object")
	}
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(body, &probe); err != nil {
		return nil, fmt.Errorf("not valid JSON: %v", err)
	}
	var card *sdk.AgentCard
	if raw, ok := probe["supportedInterfaces"]; ok && len(raw) > 2 { // a 1.0 card
		var c sdk.AgentCard
		if err := json.Unmarshal(body, &c); err == nil {
			card = &c
		}
	}
	if card == nil {
		c, err := a2av0.NewAgentCardParser()(body) // 0.3, or a union of both shapes
		if err != nil {
			return nil, fmt.Errorf("not an agent card: %v", err)
		}
		card = c
	}
	if len(card.SupportedInterfaces) == 0 {
		// A 0.3 card may leave preferredTransport out: it defaults to JSONRPC.
		var v0 struct {
			URL             string `json:"url"`
			ProtocolVersion string `json:"protocolVersion"`
		}
		if json.Unmarshal(body, &v0) == nil && v0.URL != "" {
			if v0.ProtocolVersion == "" {
				v0.ProtocolVersion = string(a2av0.Version)
			}
			card.SupportedInterfaces = []*sdk.AgentInterface{{URL: v0.URL, ProtocolBinding: sdk.TransportProtocolJSONRPC, ProtocolVersion: sdk.ProtocolVersion(v0.ProtocolVersion)}}
		}
	}
	if err := ValidateCard(card); err != nil {
		return nil, err
	}
	return card, nil
}

// ValidateCard checks what toolhub needs of a card: a name, at least one
// interface with an http(s) URL, and skills with ids.
func ValidateCard(card *sdk.AgentCard) error {
	var errs []error
	if strings.TrimSpace(card.Name) == "" {
		errs = append(errs, errors.New("name is missing"))
	}
	if len(card.SupportedInterfaces) == 0 {
		errs = append(errs, errors.New("url is missing (no supportedInterfaces, no url)"))
	}
	for i, in := range card.SupportedInterfaces {
		u, err := url.Parse(in.URL)
		if in.URL == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("supportedInterfaces[%d].url %q is not an http(s) URL", i, in.URL))
		}
	}
	if len(card.SupportedInterfaces) > 0 && pickInterface(card) == nil {
		errs = append(errs, errors.New("no interface toolhub can use: want protocolBinding JSONRPC or HTTP+JSON, protocolVersion 1.x or 0.3"))
	}
	if len(card.Skills) == 0 {
		errs = append(errs, errors.New("skills are missing: toolhub serves each skill as a tool"))
	}
	seen := map[string]bool{}
	for i, s := range card.Skills {
		switch {
		case strings.TrimSpace(s.ID) == "":
			errs = append(errs, fmt.Errorf("skills[%d] has no id", i))
		case seen[s.ID]:
			errs = append(errs, fmt.Errorf("skills[%d]: id %q is listed twice", i, s.ID))
		}
		seen[s.ID] = true
	}
	return errors.Join(errs...)
}

// pickInterface returns the interface the manager will call, or nil.
func pickInterface(card *sdk.AgentCard) *sdk.AgentInterface {
	var best *sdk.AgentInterface
	rank := func(in *sdk.AgentInterface) int {
		v1 := strings.HasPrefix(string(in.ProtocolVersion), "1.") || in.ProtocolVersion == "1" || in.ProtocolVersion == ""
		v0 := isV03(in.ProtocolVersion)
		switch {
		case in.ProtocolBinding == sdk.TransportProtocolJSONRPC && v1:
			return 4
		case in.ProtocolBinding == sdk.TransportProtocolHTTPJSON && v1:
			return 3
		case in.ProtocolBinding == sdk.TransportProtocolJSONRPC && v0:
			return 2
		case in.ProtocolBinding == sdk.TransportProtocolHTTPJSON && v0:
			return 1
		}
		return 0
	}
	for _, in := range card.SupportedInterfaces {
		if r := rank(in); r > 0 && (best == nil || r > rank(best)) {
			best = in
		}
	}
	return best
}

func isV03(v sdk.ProtocolVersion) bool {
	return v == "0.3" || strings.HasPrefix(string(v), "0.3.")
}

// SkillTools turns a card's skills into tool definitions: one tool per
// skill, named by the skill id, described by the skill (with its
// examples), taking an object with "text" (a string) and/or "data" (an
// object) as the skill's input modes allow.
func SkillTools(card *sdk.AgentCard) []registry.ToolDef {
	defs := make([]registry.ToolDef, 0, len(card.Skills))
	for _, s := range card.Skills {
		modes := s.InputModes
		if len(modes) == 0 {
			modes = card.DefaultInputModes
		}
		desc := s.Description
		if len(s.Examples) > 0 {
			desc += "\n\nExamples: " + strings.Join(s.Examples, "; ")
		}
		defs = append(defs, registry.ToolDef{
			Name:        s.ID,
			Title:       s.Name,
			Description: strings.TrimSpace(desc),
			InputSchema: InputSchema(modes),
		})
	}
	return defs
}

// InputSchema is the tool input schema for a skill with the given input
// modes (MIME types): "text" when it takes text/*, "data" when it takes
// JSON, both when it takes both or neither is said.
func InputSchema(modes []string) json.RawMessage {
	text, data := false, false
	for _, m := range modes {
		m = strings.ToLower(strings.TrimSpace(m))
		switch {
		case m == "text" || strings.HasPrefix(m, "text/"):
			text = true
		case m == "data" || m == "application/json" || strings.HasSuffix(m, "+json"):
			data = true
		}
	}
	if !text && !data {
		text, data = true, true
	}
	props := map[string]any{}
	var req []string
	if text {
		props["text"] = map[string]any{"type": "string", "description": "The message text sent to the agent."}
		req = append(req, "text")
	}
	if data {
		props["data"] = map[string]any{"type": "object", "description": "Structured input sent to the agent as a data part."}
		req = append(req, "data")
	}
	s := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(req) == 1 {
		s["required"] = req
	} else {
		s["minProperties"] = 1 // text, data or both; no top-level anyOf, which function calling refuses
	}
	b, _ := json.Marshal(s)
	return b
}
