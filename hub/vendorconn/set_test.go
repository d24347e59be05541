package vendorconn

import (
	"encoding/json"
	"errors"
	"sync"
	"testing"

	"github.com/toolhub/toolhub/registry"
)

var (
	errClosed = errors.New("closed")
	errDup    = errors.New("dup")
	errUnk    = errors.New("unknown")
)

type fake struct{ gen int }

func newSet() (*Set[*fake], *registry.Catalog) {
	cat := registry.NewCatalog()
	return NewSet[*fake](cat, Errors{Closed: errClosed, Duplicate: errDup, Unknown: errUnk}), cat
}

var echo = []registry.ToolDef{{Name: "echo", InputSchema: json.RawMessage(`{"type":"object"}`)}}

func alive() bool { return true }

func TestSetAddRemove(t *testing.T) {
	s, cat := newSet()
	started := 0
	if err := s.Add("v", func() *fake { return &fake{} }, func(*fake) { started++ }); err != nil || started != 1 {
		t.Fatalf("Add: %v, started %d", err, started)
	}
	if err := s.Add("v", func() *fake { return &fake{} }, func(*fake) { started++ }); !errors.Is(err, errDup) || started != 1 {
		t.Errorf("second Add: %v, started %d", err, started)
	}
	v, _ := s.Get("v")
	if errs, ok := s.SetTools("v", v, alive, echo); !ok || len(errs) != 0 || len(cat.VendorTools("v")) != 1 {
		t.Fatalf("SetTools: %v %v", errs, ok)
	}
	if got, err := s.Remove("v"); err != nil || got != v || len(cat.VendorTools("v")) != 0 {
		t.Errorf("Remove: %v %v, tools left %d", got, err, len(cat.VendorTools("v")))
	}
	if _, err := s.Remove("v"); !errors.Is(err, errUnk) {
		t.Errorf("Remove again: %v", err)
	}
	if _, ok := s.SetTools("v", v, alive, echo); ok || len(cat.VendorTools("v")) != 0 {
		t.Error("a removed vendor wrote the catalog")
	}
}

// TestSetReplaceOnce: replacements of one id run one after the other, each
// seeing the vendor the one before put in place, so every replaced vendor
// is handed back (to be stopped) exactly once, and none is lost running.
func TestSetReplaceOnce(t *testing.T) {
	s, _ := newSet()
	s.Add("v", func() *fake { return &fake{} }, func(*fake) {})
	var mu sync.Mutex
	handed := map[*fake]int{}
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			old, nv, err := s.Replace("v", func(old *fake) (*fake, bool) { return &fake{gen: old.gen + 1}, true })
			if err != nil || nv == nil {
				t.Errorf("Replace: %v %v", nv, err)
				return
			}
			mu.Lock()
			handed[old]++
			mu.Unlock()
		})
	}
	wg.Wait()
	cur, _ := s.Get("v")
	if cur.gen != 16 || len(handed) != 16 {
		t.Errorf("after 16 replacements: generation %d, %d vendors handed back", cur.gen, len(handed))
	}
	for f, n := range handed {
		if n != 1 || f == cur {
			t.Errorf("vendor of generation %d handed back %d times (current: %v)", f.gen, n, f == cur)
		}
	}
	old, _ := s.Get("v")
	if got, nv, err := s.Replace("v", func(*fake) (*fake, bool) { return nil, false }); err != nil || nv != nil || got != old {
		t.Errorf("in-place change: %v %v %v", got, nv, err)
	}
	if errs, ok := s.SetTools("v", &fake{}, alive, echo); ok {
		t.Errorf("SetTools of a vendor not held: %v", errs)
	}
}

func TestSetClose(t *testing.T) {
	s, _ := newSet()
	s.Add("a", func() *fake { return &fake{} }, func(*fake) {})
	called := 0
	vs, first := s.Close(func() { called++ })
	if !first || len(vs) != 1 || called != 1 {
		t.Fatalf("Close: %v %v, onClose %d", vs, first, called)
	}
	if _, first := s.Close(func() { called++ }); first || called != 1 {
		t.Error("second Close ran again")
	}
	if err := s.Add("b", func() *fake { return &fake{} }, func(*fake) {}); !errors.Is(err, errClosed) {
		t.Errorf("Add after Close: %v", err)
	}
	if _, _, err := s.Replace("a", func(*fake) (*fake, bool) { return &fake{}, true }); !errors.Is(err, errClosed) {
		t.Errorf("Replace after Close: %v", err)
	}
	ran := false
	s.Go(func() { ran = true })
	s.Wait()
	if ran || s.Track() {
		t.Error("background work started after Close")
	}
}

func TestPlanSync(t *testing.T) {
	s, _ := newSet()
	specs := map[*fake]registry.Vendor{}
	for _, id := range []string{"c", "a", "keep"} {
		s.Add(id, func() *fake { f := &fake{}; specs[f] = registry.Vendor{ID: id}; return f }, func(*fake) {})
	}
	p := PlanSync(s, []registry.Vendor{{ID: "z"}, {ID: "keep"}, {ID: "skip"}, {ID: "z"}},
		func(v registry.Vendor) bool { return v.ID != "skip" }, func(f *fake) registry.Vendor { return specs[f] })
	if len(p.Order) != 2 || p.Order[0] != "z" || p.Order[1] != "keep" {
		t.Errorf("Order = %v, want [z keep]", p.Order)
	}
	if len(p.Gone) != 2 || p.Gone[0] != "a" || p.Gone[1] != "c" {
		t.Errorf("Gone = %v, want [a c]", p.Gone)
	}
	if len(p.Errs) != 1 || len(p.Have) != 3 {
		t.Errorf("Errs = %v, Have = %v", p.Errs, p.Have)
	}
}
