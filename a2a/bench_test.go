package a2a

import (
	"context"
	"testing"
	"time"

	sdk "github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"

	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/registry"
)

// BenchmarkJSAgent is the added latency of toolhub on a call to the
// @a2a-js/sdk agent's echo skill: the same call through a hub.Gateway and
// the manager's invoker, and directly with the a2a-go client, against one
// agent in the same run. The hub rows report "x-direct", their time per
// call over the direct row's.
//
//	stream:  SendStreamingMessage, drained to the terminal state (the card streams)
//	send:    SendMessage, blocking (the card says no streaming)
func BenchmarkJSAgent(b *testing.B) {
	agent := startJSAgent(b)
	cat := registry.NewCatalog()
	m := NewManager(cat, &Options{Logger: quietLogger(), RefreshInterval: -1})
	b.Cleanup(func() { m.Close() })
	addReady(b, m, a2aSpec("agent", agent.URL+WellKnownCardPath))
	addReady(b, m, a2aSpec("agent-poll", agent.URL+"/nostream"+WellKnownCardPath))
	gw := hub.NewGateway(cat, m, &hub.Options{Logger: quietLogger()})
	ctx := context.Background()
	card, err := FetchCard(ctx, nil, agent.URL+WellKnownCardPath)
	if err != nil {
		b.Fatal(err)
	}
	client, err := a2aclient.NewFromCard(ctx, card)
	if err != nil {
		b.Fatal(err)
	}
	args := map[string]any{"text": "hello"}
	message := func() *sdk.SendMessageRequest {
		msg := sdk.NewMessage(sdk.MessageRoleUser, sdk.NewTextPart("hello"))
		msg.Metadata = map[string]any{"skill": "echo"}
		return &sdk.SendMessageRequest{Message: msg}
	}
	// Warm the agent up (node's JIT) so that neither row pays for it.
	for range 300 {
		if _, err := client.SendMessage(ctx, message()); err != nil {
			b.Fatal(err)
		}
		if _, err := gw.Call(ctx, &hub.Call{Tenant: "default", Name: "agent__echo", Arguments: args}); err != nil {
			b.Fatal(err)
		}
	}
	perOp := map[string]time.Duration{}
	run := func(name, base string, f func(b *testing.B)) {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			f(b)
			perOp[name] = b.Elapsed() / time.Duration(b.N)
			if d := perOp[base]; base != "" && d > 0 {
				b.ReportMetric(float64(perOp[name])/float64(d), "x-direct")
			}
		})
	}
	run("stream/direct", "", func(b *testing.B) {
		for b.Loop() {
			var done bool
			for ev, err := range client.SendStreamingMessage(ctx, message()) {
				if err != nil {
					b.Fatal(err)
				}
				if e, ok := ev.(*sdk.TaskStatusUpdateEvent); ok && e.Status.State == sdk.TaskStateCompleted {
					done = true
					break // as the hub does: stop at the terminal state
				}
			}
			if !done {
				b.Fatal("the stream did not complete")
			}
		}
	})
	run("stream/hub", "stream/direct", func(b *testing.B) {
		for b.Loop() {
			if _, err := gw.Call(ctx, &hub.Call{Tenant: "default", Name: "agent__echo", Arguments: args}); err != nil {
				b.Fatal(err)
			}
		}
	})
	run("send/direct", "", func(b *testing.B) {
		for b.Loop() {
			res, err := client.SendMessage(ctx, message())
			if err != nil {
				b.Fatal(err)
			}
			if t, ok := res.(*sdk.Task); !ok || t.Status.State != sdk.TaskStateCompleted {
				b.Fatalf("result %#v", res)
			}
		}
	})
	run("send/hub", "send/direct", func(b *testing.B) {
		for b.Loop() {
			if _, err := gw.Call(ctx, &hub.Call{Tenant: "default", Name: "agent-poll__echo", Arguments: args}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
