package orchestrator

import (
	"math"
	"slices"
	"testing"

	"github.com/toolhub/toolhub/registry"
	"github.com/toolhub/toolhub/registry/toolcorpus"
)

// TestIndexUpdateIsRebuild: after one vendor's tools change, leave or
// arrive, the planner's index is updated, not rebuilt (the other vendors'
// entries are the same objects), and it ranks every goal of the set as an
// index built whole from the catalog does: the same hits in the same
// order, with the same scores.
func TestIndexUpdateIsRebuild(t *testing.T) {
	p, c, cat := corpusPlanner(t, 60)
	kwOf := p.Keywords
	first := p.index()
	same := func(step string, incremental bool) {
		t.Helper()
		ix := p.index()
		if ix == first {
			t.Fatalf("%s: the index did not change", step)
		}
		whole := buildIndex(ix.version, cat.Entries(nil), kwOf)
		kept := 0
		for _, oe := range first.entries {
			if oe != nil && slices.Contains(ix.entries, oe) {
				kept++
			}
		}
		if incremental && kept < first.live()*9/10 {
			t.Errorf("%s: %d of %d entries kept: the index was rebuilt", step, kept, first.live())
		}
		if ix.live() != whole.live() {
			t.Fatalf("%s: %d entries, built whole %d", step, ix.live(), whole.live())
		}
		q := &Planner{Catalog: cat, Keywords: kwOf}
		q.off.ix.Store(whole)
		for _, g := range c.Goals {
			a, b := p.Search("default", g.Text, 10), q.Search("default", g.Text, 10)
			if len(a) != len(b) {
				t.Fatalf("%s: %q: %d hits, built whole %d", step, g.Text, len(a), len(b))
			}
			for i := range a {
				if a[i].Entry.Name != b[i].Entry.Name || math.Abs(a[i].Score-b[i].Score) > 1e-9 || !slices.Equal(a[i].Matched, b[i].Matched) {
					t.Fatalf("%s: %q: hit %d is %s %.6f %v, built whole %s %.6f %v", step, g.Text, i,
						a[i].Entry.Name, a[i].Score, a[i].Matched, b[i].Entry.Name, b[i].Score, b[i].Matched)
				}
			}
			pa, ua := p.PlanOffline("default", g.Text)
			pb, ub := q.PlanOffline("default", g.Text)
			if len(pa.Steps) != len(pb.Steps) || len(ua) != len(ub) {
				t.Fatalf("%s: %q: planned %d steps (%d unplanned), built whole %d (%d)", step, g.Text, len(pa.Steps), len(ua), len(pb.Steps), len(ub))
			}
			for i := range pa.Steps {
				if pa.Steps[i].Tool != pb.Steps[i].Tool {
					t.Fatalf("%s: %q: step %d is %s, built whole %s", step, g.Text, i, pa.Steps[i].Tool, pb.Steps[i].Tool)
				}
			}
		}
		first = ix
	}

	var en, zh []int // vendors described in English, in Chinese (with Chinese keywords)
	for i, v := range c.Vendors {
		if v.Chinese {
			zh = append(zh, i)
		} else {
			en = append(en, i)
		}
	}
	// A list_changed: one vendor's description changes, in English and in
	// Chinese (its Chinese keywords go and come back).
	for _, v := range []toolcorpus.Vendor{c.Vendors[en[len(en)/2]], c.Vendors[zh[0]]} {
		changed := slices.Clone(v.Tools)
		changed[0].Description += " Now with hourly data and forecasts."
		cat.SetVendorTools(v.ID, changed)
		same("resync "+v.ID, true)
	}

	// A vendor loses a tool, another leaves, a new one arrives (a copy of
	// a third under another id, its keywords included), the one that left
	// comes back.
	cat.SetVendorTools(c.Vendors[en[1]].ID, c.Vendors[en[1]].Tools[1:])
	same("shrink", true)
	cat.RemoveVendor(c.Vendors[en[2]].ID)
	same("leave", true)
	w := c.Vendors[zh[1]]
	cat.SetVendorTools("zz-new-vendor", w.Tools)
	base := kwOf
	kw := func(e registry.Entry) []string {
		if e.Tool.Vendor == "zz-new-vendor" {
			return w.Keywords[e.Tool.Def.Name]
		}
		return base(e)
	}
	p.Keywords, kwOf = kw, kw
	same("arrive", true)
	cat.SetVendorTools(c.Vendors[en[2]].ID, c.Vendors[en[2]].Tools)
	same("return", true)

	// Every Chinese vendor leaves: their keywords leave the dictionary, and
	// the index is built whole again (every text is read anew).
	for _, i := range zh {
		cat.RemoveVendor(c.Vendors[i].ID)
	}
	cat.RemoveVendor("zz-new-vendor")
	same("no Chinese keywords", false)
}

// TestIndexUpdateWhileSearching: searches and plans run while vendors
// change (go test -race: the index readers share is never written).
func TestIndexUpdateWhileSearching(t *testing.T) {
	p, c, cat := corpusPlanner(t, 30)
	p.index()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 40; i++ {
			g := c.Goals[i%len(c.Goals)].Text
			p.Search("default", g, 5)
			p.PlanOffline("default", g)
		}
	}()
	for i := 0; i < 10; i++ {
		v := c.Vendors[i]
		changed := slices.Clone(v.Tools)
		changed[0].Description += " Updated."
		cat.SetVendorTools(v.ID, changed)
		p.index()
		cat.RemoveVendor(c.Vendors[i+10].ID)
		p.Search("default", c.Goals[i].Text, 5)
	}
	<-done
	if got, want := p.index().live(), len(cat.Entries(nil)); got != want {
		t.Fatalf("%d entries indexed, the catalog has %d", got, want)
	}
}
