// Package audittest is the contract every [audit.Log] passes: the file in
// package audit and PostgreSQL in audit/pgaudit.
//
//	audittest.Run(t, func(t *testing.T) audit.Log { return audit.NewFile(filepath.Join(t.TempDir(), "audit.jsonl")) }, nil)
package audittest

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/toolhub/toolhub/audit"
	"github.com/toolhub/toolhub/auth"
)

// Run runs the contract against logs made by newLog, each empty and closed
// when its test ends. reopen, if not nil, opens another log on the same
// entries as l (another hub on one database): each sees what the other
// appended.
func Run(t *testing.T, newLog func(t *testing.T) audit.Log, reopen func(t *testing.T, l audit.Log) audit.Log) {
	t.Run("AppendRecent", func(t *testing.T) { appendRecent(t, newLog(t)) })
	t.Run("NoSecrets", func(t *testing.T) { noSecrets(t, newLog(t)) })
	t.Run("Concurrent", func(t *testing.T) { concurrent(t, newLog(t)) })
	if reopen != nil {
		t.Run("Shared", func(t *testing.T) {
			a := newLog(t)
			shared(t, a, reopen(t, a))
		})
	}
}

func entry(i int) audit.Entry {
	return audit.Entry{
		At:     time.Date(2026, 1, 2, 3, 4, 5, i*1000, time.UTC),
		Who:    auth.Principal{KeyID: "00000000000000aa", Role: auth.RoleOperator},
		Action: "vendor.update",
		Target: fmt.Sprintf("vendor-%02d", i),
		Before: json.RawMessage(fmt.Sprintf(`{"id":"vendor-%02d","mcp":{"transport":"http","url":"http://a.example/mcp"}}`, i)),
		After:  json.RawMessage(fmt.Sprintf(`{"id":"vendor-%02d","mcp":{"transport":"http","url":"http://b.example/mcp"},"limits":{"rps":%d}}`, i, i+1)),
	}
}

// jsonEqual compares raw JSON by meaning (a database may respace it).
var jsonEqual = cmp.Comparer(func(a, b json.RawMessage) bool {
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && cmp.Equal(x, y)
})

func appendRecent(t *testing.T, l audit.Log) {
	ctx := t.Context()
	if got, err := l.Recent(ctx, 10); err != nil || len(got) != 0 {
		t.Fatalf("a new log: %v, %v", got, err)
	}
	var want []audit.Entry
	for i := range 5 {
		e := entry(i)
		if i == 3 { // no before, no after, another principal
			e.Before, e.After, e.Action, e.Who = nil, nil, "key.revoke", auth.Principal{KeyID: "00000000000000bb", Role: auth.RoleVendor, Vendor: "v"}
		}
		if err := l.Append(ctx, e); err != nil {
			t.Fatal(err)
		}
		want = append(want, e)
	}
	for _, tt := range []struct {
		n    int
		want []audit.Entry
	}{{0, want}, {-1, want}, {2, want[3:]}, {5, want}, {50, want}, {1, want[4:]}} {
		got, err := l.Recent(ctx, tt.n)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tt.want, got, jsonEqual); diff != "" {
			t.Errorf("Recent(%d) (-want +got):\n%s", tt.n, diff)
		}
	}
}

func noSecrets(t *testing.T, l audit.Log) {
	ctx := t.Context()
	tok, _, err := auth.Issue(ctx, auth.NewMemoryStore(), auth.Key{Role: auth.RoleOperator}, 0)
	if err != nil {
		t.Fatal(err)
	}
	spec := map[string]any{"id": "v", "mcp": map[string]any{"transport": "http", "url": "http://v.example/mcp",
		"headers": map[string]any{"Authorization": "Bearer sk-live-123456", "X-Api-Key": "k-987654", "X-Ref": "Bearer ${V_KEY}", "Accept": "application/json"}},
		"note": "called with " + tok}
	after, _ := json.Marshal(spec)
	if err := l.Append(ctx, audit.Entry{At: time.Now().UTC(), Action: "vendor.register", Target: "v " + tok, After: after}); err != nil {
		t.Fatal(err)
	}
	got, err := l.Recent(ctx, 1)
	if err != nil || len(got) != 1 {
		t.Fatalf("Recent = %v, %v", got, err)
	}
	b, _ := json.Marshal(got[0])
	for _, secret := range []string{tok, "sk-live-123456", "k-987654"} {
		if strings.Contains(string(b), secret) {
			t.Errorf("the log kept a secret %q: %s", secret, b)
		}
	}
	for _, kept := range []string{"Bearer ${V_KEY}", "application/json", "http://v.example/mcp"} {
		if !strings.Contains(string(b), kept) {
			t.Errorf("the log lost %q, which is no secret: %s", kept, b)
		}
	}
}

func concurrent(t *testing.T, l audit.Log) {
	ctx := t.Context()
	const writers, each = 4, 10
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				if err := l.Append(ctx, entry(w*each+i)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	got, err := l.Recent(ctx, 0)
	if err != nil || len(got) != writers*each {
		t.Fatalf("Recent = %d entries, %v; want %d", len(got), err, writers*each)
	}
	seen := map[string]bool{}
	last := map[int]int{} // writer → last index seen: each writer's entries in its order
	for _, e := range got {
		seen[e.Target] = true
		var i int
		fmt.Sscanf(e.Target, "vendor-%d", &i)
		if prev, ok := last[i/each]; ok && prev > i {
			t.Errorf("writer %d's entries out of order: %d after %d", i/each, i, prev)
		}
		last[i/each] = i
	}
	if len(seen) != writers*each {
		t.Errorf("%d distinct entries, want %d", len(seen), writers*each)
	}
}

func shared(t *testing.T, a, b audit.Log) {
	ctx := t.Context()
	for i := range 4 {
		l := a
		if i%2 == 1 {
			l = b
		}
		if err := l.Append(ctx, entry(i)); err != nil {
			t.Fatal(err)
		}
	}
	for name, l := range map[string]audit.Log{"a": a, "b": b} {
		got, err := l.Recent(ctx, 0)
		if err != nil || len(got) != 4 {
			t.Fatalf("%s: Recent = %d entries, %v; want 4", name, len(got), err)
		}
		for i, e := range got {
			if want := fmt.Sprintf("vendor-%02d", i); e.Target != want {
				t.Errorf("%s: entry %d is %s, want %s", name, i, e.Target, want)
			}
		}
	}
}
