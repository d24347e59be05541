// Command testvendor is a tiny MCP server over stdio for the servers
// package's tests. It serves a few tools and can be told to misbehave.
//
//	testvendor [-exit-after N] [-bad-schema] [-page N]
//
// TESTVENDOR_EXIT_AFTER=N works like -exit-after. Tools:
//
//	echo {text}      text and structured {"text": …}; its input schema uses a
//	                 top-level anyOf, which mcp-go's decoded mcp.Tool drops
//	add {a, b}       structured {"sum": a+b}, with an output schema
//	pid              the process id
//	env {name}       the value of an environment variable ("" and unset: isError)
//	cwd              the working directory
//	slow {ms}        waits ms milliseconds, or until cancelled (then says so on stderr)
//	meta             the request's _meta, as JSON
//	big {n}          n bytes of text
//	add_tool {name}  adds an echo-like tool: the server sends tools/list_changed
//	fail             answers isError
//	crash            exits at once, without answering
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

func main() {
	exitAfter := flag.Int64("exit-after", 0, "exit (status 3) after answering this many tool calls")
	badSchema := flag.Bool("bad-schema", false, "also serve a tool whose input schema does not compile")
	page := flag.Int("page", 0, "tools/list page size (0: no paging)")
	relay := flag.Bool("relay", false, "also serve tools that send the client requests (sample, elicit)")
	hugeDesc := flag.Int("huge-desc", 0, "also serve a tool with a description of this many bytes")
	flag.Parse()
	if v := os.Getenv("TESTVENDOR_EXIT_AFTER"); v != "" && *exitAfter == 0 {
		*exitAfter, _ = strconv.ParseInt(v, 10, 64)
	}
	fmt.Fprintf(os.Stderr, "testvendor: started, pid %d\n", os.Getpid())

	opts := []server.ServerOption{server.WithToolCapabilities(true), server.WithElicitation()}
	if *page > 0 {
		opts = append(opts, server.WithPaginationLimit(*page))
	}
	s := server.NewMCPServer("testvendor", "1.0.0", opts...)

	add := countedAdder(s, *exitAfter)
	addTools(s, add)
	if *relay {
		relayTools(s, add)
	}
	if *badSchema {
		add(mcp.NewToolWithRawSchema("broken", "Its schema does not compile.", json.RawMessage(
			`{"type":"object","properties":{"x":{"type":"integr"}}}`)), echo)
	}

	if *hugeDesc > 0 {
		add(mcp.NewTool("huge", mcp.WithDescription(strings.Repeat("d", *hugeDesc))), echo)
	}

	if err := server.ServeStdio(s); err != nil {
		fmt.Fprintf(os.Stderr, "testvendor: %v\n", err)
		os.Exit(1)
	}
}

// countedAdder is how main adds a tool to s: its calls are counted, and
// the vendor exits (status 3) once it answered exitAfter of them (0: never).
func countedAdder(s *server.MCPServer, exitAfter int64) func(mcp.Tool, server.ToolHandlerFunc) {
	var calls atomic.Int64
	counted := func(h server.ToolHandlerFunc) server.ToolHandlerFunc {
		return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			res, err := h(ctx, req)
			if n := calls.Add(1); exitAfter > 0 && n >= exitAfter {
				// Answer first, then go: the answer is written by the
				// server after the handler returns.
				go func() {
					time.Sleep(50 * time.Millisecond)
					fmt.Fprintf(os.Stderr, "testvendor: exiting after %d calls\n", n)
					os.Exit(3)
				}()
			}
			return res, err
		}
	}
	return func(t mcp.Tool, h server.ToolHandlerFunc) { s.AddTool(t, counted(h)) }
}

// echo answers the text it was given, as text and structured content.
func echo(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	text := req.GetString("text", "")
	return mcp.NewToolResultStructured(map[string]any{"text": text}, text), nil
}

// addTools adds the tools every testvendor serves: echo, add, the
// process's pid, env and cwd, slow, meta, big, add_tool (which adds a tool
// to s), fail and crash.
func addTools(s *server.MCPServer, add func(mcp.Tool, server.ToolHandlerFunc)) {
	add(mcp.NewToolWithRawSchema("echo", "Echoes text.", json.RawMessage(
		`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"],"anyOf":[{"required":["text"]}]}`)), echo)

	addTool := mcp.NewToolWithRawSchema("add", "Adds two numbers.", json.RawMessage(
		`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}`))
	addTool.RawOutputSchema = json.RawMessage(`{"type":"object","properties":{"sum":{"type":"number"}},"required":["sum"]}`)
	add(addTool, func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		a, b := req.GetFloat("a", 0), req.GetFloat("b", 0)
		return mcp.NewToolResultStructured(map[string]any{"sum": a + b}, fmt.Sprint(a+b)), nil
	})

	add(mcp.NewTool("pid", mcp.WithDescription("Returns the process id.")), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText(strconv.Itoa(os.Getpid())), nil
	})
	add(mcp.NewTool("env", mcp.WithString("name", mcp.Required())), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		v, ok := os.LookupEnv(req.GetString("name", ""))
		if !ok {
			return mcp.NewToolResultError("unset"), nil
		}
		return mcp.NewToolResultText(v), nil
	})
	add(mcp.NewTool("cwd"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		wd, _ := os.Getwd()
		return mcp.NewToolResultText(wd), nil
	})
	add(mcp.NewTool("slow", mcp.WithNumber("ms")), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		t := time.NewTimer(time.Duration(req.GetFloat("ms", 0)) * time.Millisecond)
		defer t.Stop()
		select {
		case <-t.C:
			return mcp.NewToolResultText("done"), nil
		case <-ctx.Done():
			fmt.Fprintln(os.Stderr, "testvendor: slow cancelled")
			return nil, ctx.Err()
		}
	})
	add(mcp.NewTool("meta"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		b, _ := json.Marshal(req.Params.Meta)
		return mcp.NewToolResultText(string(b)), nil
	})
	add(mcp.NewTool("big", mcp.WithNumber("n")), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText(strings.Repeat("x", int(req.GetFloat("n", 0)))), nil
	})
	add(mcp.NewTool("add_tool", mcp.WithString("name", mcp.Required())), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		name := req.GetString("name", "")
		s.AddTool(mcp.NewTool(name, mcp.WithString("text")), echo)
		return mcp.NewToolResultText("added " + name), nil
	})
	add(mcp.NewTool("fail"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultError("it failed, as asked"), nil
	})
	add(mcp.NewTool("crash"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		os.Exit(2)
		return nil, nil
	})
}

// relayTools are tools that send the client requests during the call.
func relayTools(s *server.MCPServer, add func(mcp.Tool, server.ToolHandlerFunc)) {
	// sent numbers the requests the tools send: mcp-go's stdio server
	// numbers them 1, 2, … on the session, and the tools send no others.
	var sent atomic.Int64
	// sample asks the client for a sampling round trip and returns the text.
	s.EnableSampling()
	add(mcp.NewTool("sample", mcp.WithString("prompt")), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		sent.Add(1)
		sreq := mcp.CreateMessageRequest{CreateMessageParams: mcp.CreateMessageParams{MaxTokens: 10,
			Messages: []mcp.SamplingMessage{{Role: mcp.RoleUser, Content: mcp.NewTextContent(req.GetString("prompt", "hi"))}}}}
		//lint:ignore SA1019 vendors on revisions before 2026-07-28 still send sampling requests; this vendor is how the relay of them is tested
		res, err := s.RequestSampling(ctx, sreq)
		if err != nil {
			return mcp.NewToolResultError("sampling: " + err.Error()), nil
		}
		if tc, ok := mcp.AsTextContent(res.Content); ok {
			return mcp.NewToolResultText(tc.Text), nil
		}
		return mcp.NewToolResultText(fmt.Sprint(res.Content)), nil
	})
	// elicit asks the client for a name; the request names the call's
	// progress token in its _meta, tying it to the call.
	add(mcp.NewTool("elicit"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		ereq := mcp.ElicitationRequest{Params: mcp.ElicitationParams{Message: "who are you?",
			RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}}}
		if m := req.Params.Meta; m != nil && m.ProgressToken != nil {
			ereq.Params.Meta = &mcp.Meta{ProgressToken: m.ProgressToken}
		}
		sent.Add(1)
		res, err := s.RequestElicitation(ctx, ereq)
		if err != nil {
			return mcp.NewToolResultError("elicitation: " + err.Error()), nil
		}
		return mcp.NewToolResultText(fmt.Sprint(res.Content.(map[string]any)["name"])), nil
	})
	// give-up sends notifications/cancelled for the last request a tool
	// sent (the vendor no longer wants its answer).
	add(mcp.NewTool("give-up"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		id := sent.Load()
		err := s.SendNotificationToClient(ctx, string(mcp.MethodNotificationCancelled), map[string]any{"requestId": id, "reason": "the vendor gave up"})
		if err != nil {
			return mcp.NewToolResultError(err.Error()), nil
		}
		return mcp.NewToolResultText(fmt.Sprint("cancelled ", id)), nil
	})
}
