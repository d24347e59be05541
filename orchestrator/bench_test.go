package orchestrator

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/registry"
)

// instantGateway answers every call at once (or after d), so a benchmark
// measures the planner, not tools.
type instantGateway struct{ d time.Duration }

func (g instantGateway) Lookup(tenant, name string) (registry.Entry, bool) {
	return registry.Entry{Name: name}, true
}

func (g instantGateway) Call(ctx context.Context, c *hub.Call) (*hub.Result, error) {
	if g.d > 0 {
		t := time.NewTimer(g.d)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		}
	}
	return &hub.Result{Structured: map[string]any{"v": 1.0}, Content: []mcp.Content{mcp.NewTextContent("ok")}}, nil
}

// BenchmarkPlanStepOverhead is the executor's cost per step with tool time
// excluded: validation, scheduling, reference resolution, events.
func BenchmarkPlanStepOverhead(b *testing.B) {
	for _, shape := range []string{"independent", "chain"} {
		b.Run(shape, func(b *testing.B) {
			const n = 20
			steps := make([]Step, n)
			for i := range steps {
				steps[i] = Step{ID: fmt.Sprintf("s%d", i), Tool: "t", Arguments: map[string]any{"x": "y"}}
				if shape == "chain" && i > 0 {
					prev := fmt.Sprintf("s%d", i-1)
					steps[i].DependsOn = []string{prev}
					steps[i].Arguments = map[string]any{"x": "{{steps." + prev + ".structured.v}}"}
				}
			}
			x := &Executor{Gateway: instantGateway{}}
			events := func(Event) {}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := x.Run(context.Background(), "t", &Plan{ID: "p", Steps: steps}, events); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/step")
		})
	}
}

// BenchmarkDAG20x5 runs 20 steps of d each, in 4 layers of 5 (each layer
// depends on the whole previous one), 5 at a time: the critical path is 4d.
// It reports wall time over the critical path (1.0 is ideal).
func BenchmarkDAG20x5(b *testing.B) {
	for _, d := range []time.Duration{2 * time.Millisecond, 10 * time.Millisecond} {
		b.Run(d.String(), func(b *testing.B) {
			var steps []Step
			var prev []string
			for layer := range 4 {
				var cur []string
				for j := range 5 {
					id := fmt.Sprintf("l%ds%d", layer, j)
					steps = append(steps, Step{ID: id, Tool: "t", DependsOn: prev})
					cur = append(cur, id)
				}
				prev = cur
			}
			x := &Executor{Gateway: instantGateway{d: d}, Parallel: 5}
			for b.Loop() {
				if _, err := x.Run(context.Background(), "t", &Plan{ID: "p", Steps: steps}, nil); err != nil {
					b.Fatal(err)
				}
			}
			critical := 4 * d
			b.ReportMetric(float64(b.Elapsed())/float64(b.N)/float64(critical), "wall/critical")
		})
	}
}
