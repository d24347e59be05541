package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// hubFlag adds --hub (the running hub's base URL) to fs.
func hubFlag(fs *flag.FlagSet) *string {
	def := os.Getenv("TOOLHUB_URL")
	if def == "" {
		def = "http://127.0.0.1:8080"
	}
	return fs.String("hub", def, "base URL of the running hub (env TOOLHUB_URL)")
}

// hubURL is --hub as a base URL: "127.0.0.1:8080" means
// "http://127.0.0.1:8080".
func hubURL(base string) string {
	base = strings.TrimRight(strings.TrimSpace(base), "/")
	if !strings.Contains(base, "://") {
		base = "http://" + base
	}
	return base
}

type timeoutKey struct{}

// withTimeout bounds ctx by d (a command's --timeout; 0 means none) and
// remembers d for the error message.
func withTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if d <= 0 {
		return ctx, func() {}
	}
	ctx, cancel := context.WithTimeout(context.WithValue(ctx, timeoutKey{}, d), d)
	return ctx, cancel
}

func timeoutOf(ctx context.Context) (time.Duration, bool) {
	d, ok := ctx.Value(timeoutKey{}).(time.Duration)
	return d, ok
}

// request sends a request to the hub and decodes a JSON answer into out.
// A toolhub error body becomes an error with its code.
func request(ctx context.Context, method, base, path string, body any, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, hubURL(base)+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if k := os.Getenv("TOOLHUB_KEY"); k != "" {
		req.Header.Set("Authorization", "Bearer "+k)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		if d, ok := timeoutOf(ctx); ok && errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("no answer from %s within --timeout %v", req.URL.Host, d)
		}
		return fmt.Errorf("%v (is toolhub running? start it with `make run`)", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode >= 300 {
		var e struct {
			Error struct {
				Code, Message string
			} `json:"error"`
		}
		var err error
		if json.Unmarshal(b, &e) == nil && e.Error.Code != "" {
			err = fmt.Errorf("%s: %s", e.Error.Code, e.Error.Message)
		} else {
			err = fmt.Errorf("HTTP %d: %s", resp.StatusCode, bytes.TrimSpace(b))
		}
		if resp.StatusCode == http.StatusUnauthorized {
			if os.Getenv("TOOLHUB_KEY") == "" {
				return fmt.Errorf("%w\nThis hub needs an API key: set TOOLHUB_KEY to one (make one with `toolhub keys create --role operator` on the hub's machine)", err)
			}
			return fmt.Errorf("%w\nThe key in TOOLHUB_KEY was refused: set TOOLHUB_KEY to a valid, unexpired key", err)
		}
		return err
	}
	return json.Unmarshal(b, out)
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

func tools(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flags("tools", "[flags]", "List the catalog of a running hub: capabilities first, then vendor tools.", stderr)
	base := hubFlag(fs)
	format := fs.String("format", "table", "table, json, or openai (chat-completions tools specs)")
	query := fs.String("query", "", "instead of the whole catalog: the tools that best answer this goal, best first, with a score and the words that matched")
	topK := fs.Int("top-k", 10, "with --query: how many tools (1 to 50)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	q := url.Values{}
	if *query != "" {
		q.Set("query", *query)
		q.Set("top_k", strconv.Itoa(*topK))
	}
	switch *format {
	case "openai", "json":
		if *format == "openai" {
			q.Set("format", "openai")
		}
		path := "/v1/tools"
		if len(q) > 0 {
			path += "?" + q.Encode()
		}
		var raw map[string]any
		if err := request(ctx, "GET", *base, path, nil, &raw); err != nil {
			return err
		}
		return printJSON(stdout, raw)
	case "table":
	default:
		return fmt.Errorf("--format %q: want table, json or openai", *format)
	}
	var out struct {
		Tools []struct {
			Name, Kind, Vendor, Description string
			Chain                           []string
			Score                           float64
			Matched                         []string
		} `json:"tools"`
	}
	path := "/v1/tools"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	if err := request(ctx, "GET", *base, path, nil, &out); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
	if *query != "" {
		fmt.Fprintln(tw, "NAME\tKIND\tSCORE\tMATCHED\tDESCRIPTION")
		for _, t := range out.Tools {
			fmt.Fprintf(tw, "%s\t%s\t%.2f\t%s\t%s\n", t.Name, t.Kind, t.Score, strings.Join(t.Matched, " "), clip(t.Description, 60))
		}
		return tw.Flush()
	}
	fmt.Fprintln(tw, "NAME\tKIND\tVENDOR / CHAIN\tDESCRIPTION")
	for _, t := range out.Tools {
		who := t.Vendor
		if t.Kind == "capability" {
			who = strings.Join(t.Chain, " → ")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", t.Name, t.Kind, who, clip(t.Description, 70))
	}
	return tw.Flush()
}

func call(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flags("call", "NAME [JSON] [flags]", "Call a tool (vendor__tool) or a capability (image.generate, or image_generate) through a running hub.\nJSON is the arguments object; '-' reads it from stdin.", stderr)
	base := hubFlag(fs)
	timeout := fs.Duration("timeout", 0, "the call's overall deadline: the hub fits retries and fallbacks inside it, and the command gives up 5s after it; 0: the hub's default for the tool")
	pos, err := parseMixed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) < 1 || len(pos) > 2 {
		fs.Usage()
		return errUsage
	}
	argJSON := "{}"
	if len(pos) == 2 {
		argJSON = pos[1]
	}
	if argJSON == "-" {
		b, err := io.ReadAll(os.Stdin)
		if err != nil {
			return err
		}
		argJSON = string(b)
	}
	var arguments map[string]any
	if err := json.Unmarshal([]byte(argJSON), &arguments); err != nil {
		return fmt.Errorf("arguments must be a JSON object: %v", err)
	}
	body := map[string]any{"arguments": arguments}
	if *timeout < 0 {
		return fmt.Errorf("--timeout %v: want a positive duration", *timeout)
	}
	cancel := context.CancelFunc(func() {})
	if *timeout > 0 {
		body["timeout"] = timeout.String()
		// The hub answers by the deadline; the margin is for the network.
		ctx, cancel = withTimeout(ctx, *timeout+5*time.Second)
	}
	defer cancel()
	var out map[string]any
	if err := request(ctx, "POST", *base, "/v1/tools/"+url.PathEscape(pos[0])+"/call", body, &out); err != nil {
		return err
	}
	return printJSON(stdout, out)
}

func vendorsCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 {
		switch args[0] {
		case "add", "update", "remove", "versions", "rollback":
			return vendorChange(ctx, args[0], args[1:], stdout, stderr)
		case "pending", "approve", "reject":
			return vendorDecision(ctx, args[0], args[1:], stdout, stderr)
		case "list":
			args = args[1:]
		}
	}
	fs := flags("vendors", "[list|add|update|remove|versions|rollback|pending|approve|reject] [flags]", "List the vendors of a running hub with their status, or change one\n(toolhub vendors add --help). Uses the key in TOOLHUB_KEY.", stderr)
	base := hubFlag(fs)
	asJSON := fs.Bool("json", false, "print JSON")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "toolhub vendors: unknown subcommand %q\n\n", fs.Arg(0))
		fs.Usage()
		return errUsage
	}
	if *asJSON {
		var raw map[string]any
		if err := request(ctx, "GET", *base, "/v1/vendors", nil, &raw); err != nil {
			return err
		}
		return printJSON(stdout, raw)
	}
	var out struct {
		Vendors []struct {
			ID, State, Transport string
			LastError            string `json:"last_error"`
			Tools                int
			InFlight             int `json:"in_flight"`
			Governance           struct {
				Breaker struct{ State string }
				Ramp    struct{ Percent float64 }
				Ejected bool
				Limits  struct {
					RPS         float64
					Concurrency int
				}
				Usage struct {
					Rejections int64 `json:"limiter_rejections"`
				}
			}
		} `json:"vendors"`
	}
	if err := request(ctx, "GET", *base, "/v1/vendors", nil, &out); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "VENDOR\tSTATE\tTRANSPORT\tTOOLS\tBREAKER\tRAMP\tRPS LIMIT\tIN FLIGHT\tREFUSED\tLAST ERROR")
	for _, v := range out.Vendors {
		g := v.Governance
		state := v.State
		if g.Ejected {
			state += " (ejected)"
		}
		rps := "-"
		if g.Limits.RPS > 0 {
			rps = fmt.Sprint(g.Limits.RPS)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%.0f%%\t%s\t%d\t%d\t%v\n", v.ID, state, v.Transport, v.Tools,
			g.Breaker.State, g.Ramp.Percent, rps, v.InFlight, g.Usage.Rejections, orDash(v.LastError))
	}
	return tw.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// vendorChange registers, updates, removes or rolls back a vendor through
// the running hub's self-service API (a vendor key for its own vendor, or
// an operator key, in TOOLHUB_KEY).
func vendorChange(ctx context.Context, verb string, args []string, stdout, stderr io.Writer) error {
	usage := map[string]string{
		"add":      "ID --url URL [--transport http|sse] | --card URL | --command CMD [--arg A]...  register a vendor; it is probed and its schemas checked first",
		"update":   "ID --url URL [--transport http|sse] | --card URL | --command CMD [--arg A]...  change a vendor; a change callers would notice waits for an operator",
		"remove":   "ID  remove a vendor registered at run time",
		"versions": "ID  list a vendor's versions",
		"rollback": "ID --version N  make an earlier version current again",
	}[verb]
	fs := flags("vendors "+verb, usage, "Changes go through the running hub (TOOLHUB_URL) with the key in TOOLHUB_KEY.", stderr)
	base := hubFlag(fs)
	var vf vendorFlags
	fs.StringVar(&vf.url, "url", "", "MCP server URL (streamable HTTP or SSE)")
	fs.StringVar(&vf.transport, "transport", "http", "http (streamable HTTP) or sse")
	fs.StringVar(&vf.card, "card", "", "A2A agent card URL, instead of --url")
	fs.StringVar(&vf.command, "command", "", "a stdio MCP server to run on the hub (operator keys, with admin.allow_stdio_vendors in the config), instead of --url")
	fs.Var(&vf.args, "arg", "with --command: one argument of the command (repeat for more)")
	fs.Var(&vf.env, "env", "with --command: NAME=VALUE in the command's environment; VALUE may say ${VAR} (repeat for more)")
	fs.StringVar(&vf.name, "name", "", "display name")
	version := fs.Int64("version", 0, "with rollback: the version to return to (see `toolhub vendors versions ID`)")
	var id string
	for len(args) > 0 {
		if err := fs.Parse(args); err != nil {
			return err
		}
		if fs.NArg() == 0 {
			break
		}
		if id != "" {
			fs.Usage()
			return errUsage
		}
		id, args = fs.Arg(0), fs.Args()[1:]
	}
	if id == "" {
		fs.Usage()
		return errUsage
	}
	var out map[string]any
	var err error
	path := "/v1/vendors/" + url.PathEscape(id)
	switch verb {
	case "add", "update":
		spec, serr := vf.spec(id)
		if serr != nil {
			return serr
		}
		method := "POST"
		if verb == "update" {
			method = "PUT"
		}
		err = request(ctx, method, *base, path, spec, &out)
	case "remove":
		err = request(ctx, "DELETE", *base, path, nil, &out)
	case "versions":
		err = request(ctx, "GET", *base, path+"/versions", nil, &out)
	case "rollback":
		if *version <= 0 {
			fmt.Fprintf(stderr, "toolhub vendors rollback: say which version to return to with --version N;\nlist %s's versions with `toolhub vendors versions %s`\n", id, id)
			return errUsage
		}
		err = request(ctx, "POST", *base, path+"/rollback", map[string]any{"version": *version}, &out)
	}
	if err != nil {
		return err
	}
	return printJSON(stdout, out)
}

// vendorFlags are the flags of `toolhub vendors add|update`: the vendor's
// spec.
type vendorFlags struct {
	url, transport, card, command, name string
	args, env                           repeated // with command
}

// spec is the vendor spec the flags say, for the vendor id: exactly one of
// an MCP server over HTTP (url), over stdio (command) or an A2A agent
// (card).
func (vf *vendorFlags) spec(id string) (map[string]any, error) {
	spec := map[string]any{"id": id}
	if vf.name != "" {
		spec["name"] = vf.name
	}
	given := 0
	for _, f := range []string{vf.card, vf.url, vf.command} {
		if f != "" {
			given++
		}
	}
	switch {
	case given != 1:
		return nil, errors.New("give one of --url (an MCP server over HTTP), --command (an MCP server over stdio) or --card (an A2A agent)")
	case vf.card != "":
		spec["a2a"] = map[string]any{"card": vf.card}
	case vf.url != "":
		spec["mcp"] = map[string]any{"transport": vf.transport, "url": vf.url}
	default:
		m, err := vf.stdio()
		if err != nil {
			return nil, err
		}
		spec["mcp"] = m
	}
	if (len(vf.args) > 0 || len(vf.env) > 0) && vf.command == "" {
		return nil, errors.New("--arg and --env go with --command")
	}
	return spec, nil
}

// stdio is the mcp part of a spec for a stdio server: command, args, env.
func (vf *vendorFlags) stdio() (map[string]any, error) {
	m := map[string]any{"transport": "stdio", "command": vf.command}
	if len(vf.args) > 0 {
		m["args"] = []string(vf.args)
	}
	if len(vf.env) > 0 {
		env := map[string]string{}
		for _, kv := range vf.env {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || k == "" {
				return nil, fmt.Errorf("--env %q: want NAME=VALUE", kv)
			}
			env[k] = v
		}
		m["env"] = env
	}
	return m, nil
}

// repeated is a flag that may be given several times.
type repeated []string

func (r *repeated) String() string     { return strings.Join(*r, " ") }
func (r *repeated) Set(v string) error { *r = append(*r, v); return nil }

// vendorDecision lists the vendor changes waiting for an operator, or
// approves or rejects one (an operator key in TOOLHUB_KEY).
func vendorDecision(ctx context.Context, verb string, args []string, stdout, stderr io.Writer) error {
	usage := map[string]string{
		"pending": "[flags]  list vendor changes waiting for an operator, with why they wait",
		"approve": "ID [flags]  make a vendor's pending change live",
		"reject":  "ID [flags]  drop a vendor's pending change; the current version keeps serving",
	}[verb]
	fs := flags("vendors "+verb, usage, "Needs an operator key in TOOLHUB_KEY.", stderr)
	base := hubFlag(fs)
	pos, err := parseMixed(fs, args)
	if err != nil {
		return err
	}
	if verb == "pending" && len(pos) != 0 || verb != "pending" && len(pos) != 1 {
		fs.Usage()
		return errUsage
	}
	var out map[string]any
	if verb == "pending" {
		err = request(ctx, "GET", *base, "/v1/admin/vendors/pending", nil, &out)
	} else {
		err = request(ctx, "POST", *base, "/v1/admin/vendors/"+url.PathEscape(pos[0])+"/"+verb, nil, &out)
	}
	if err != nil {
		return err
	}
	return printJSON(stdout, out)
}

// clip shortens s to n runes, with "..." when cut.
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-3]) + "..."
}
