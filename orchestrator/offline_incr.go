package orchestrator

import (
	"slices"
	"strings"

	"github.com/toolhub/toolhub/internal/x/cowmap"
	"github.com/toolhub/toolhub/registry"
)

// Updating the offline index after a catalog change: a list_changed of one
// vendor indexes that vendor's tools again and copies only the postings
// (and cowmap shards) they touch, so the cost is the vendor's, not the
// catalog's. A change of the capabilities, or of the Chinese dictionary
// (a Chinese keyword new to the catalog, or its last entry gone), or an
// index with more free slots than entries, is built whole again.

// keywordsFP is the keywords fingerprint of ix's vendors' tools now.
func (ix *offlineIndex) keywordsFP(keywords func(registry.Entry) []string) uint64 {
	var fp uint64
	ix.vendors.Range(func(v string, part *vendorPart) bool {
		fp += mixFP(v, vendorKeywordsFP(part.tools, keywords))
		return true
	})
	return fp
}

// update returns the index of cat at version made from ix, or nil when it
// must be built whole. At ix's own version only the keywords changed: every
// vendor's are read again. At a new version the vendors whose tools changed
// ([registry.Catalog.ChangedSince], or else by identity: the catalog keeps
// an unchanged vendor's slice) are indexed again, with their keywords read
// again; the keywords of the others are checked at the next use of this
// version, as they always were.
func (ix *offlineIndex) update(cat *registry.Catalog, version uint64, keywords func(registry.Entry) []string) *offlineIndex {
	caps := cat.Capabilities()
	if !slices.Equal(caps, ix.caps) {
		return nil
	}
	changed := map[string][]*registry.Tool{}
	if version != ix.version {
		if vs, ok := cat.ChangedSince(ix.version); ok {
			for _, v := range vs {
				changed[v] = cat.VendorTools(v)
			}
			return ix.withVendors(version, changed, keywords)
		}
	}
	known := 0
	cat.EachVendor(func(v string, tools []*registry.Tool) {
		part, ok := ix.vendors.Get(v)
		if ok {
			known++
		}
		switch {
		case !ok || !slices.Equal(part.tools, tools):
			changed[v] = tools
		case version == ix.version && keywords != nil && vendorKeywordsFP(tools, keywords) != part.fp:
			changed[v] = tools
		}
	})
	if known != ix.vendors.Len() { // some vendors left
		ix.vendors.Range(func(v string, _ *vendorPart) bool {
			if len(cat.VendorTools(v)) == 0 {
				changed[v] = nil
			}
			return true
		})
	}
	return ix.withVendors(version, changed, keywords)
}

// withVendors is ix at version with each vendor of changed indexed again
// with the tools given (none: the vendor left), or nil when the index must
// be built whole. ix is not changed.
func (ix *offlineIndex) withVendors(version uint64, changed map[string][]*registry.Tool, keywords func(registry.Entry) []string) *offlineIndex {
	nx := *ix
	nx.version = version
	nx.entries = slices.Clone(ix.entries)
	nx.free = slices.Clone(ix.free)
	nx.post, nx.bigrams = ix.post.Fork(), ix.bigrams.Fork()
	nx.hanRefs, nx.phrases, nx.vocab, nx.vendors = ix.hanRefs.Fork(), ix.phrases.Fork(), ix.vocab.Fork(), ix.vendors.Fork()

	vendors := make([]string, 0, len(changed))
	for v := range changed {
		vendors = append(vendors, v)
	}
	slices.Sort(vendors)

	// Take the vendors' old entries out.
	removed := map[int]bool{}
	lost := map[string]bool{}     // Chinese keywords no entry has now
	touched := map[string]bool{}  // keys of post whose postings change
	touchedB := map[string]bool{} // keys of bigrams
	var reuse []int
	for _, v := range vendors {
		part, ok := nx.vendors.Get(v)
		if !ok {
			continue
		}
		nx.fp -= mixFP(v, part.fp)
		for _, slot := range part.slots {
			oe := nx.entries[slot]
			removed[slot] = true
			for _, k := range oe.keys {
				touched[k] = true
			}
			for _, k := range oe.bigrams {
				touchedB[k] = true
			}
			nx.dropWords(oe, lost)
			nx.entries[slot] = nil
			reuse = append(reuse, slot)
		}
		nx.vendors.Delete(v)
	}

	// Read the new ones, and check the dictionary stays as it is.
	type fresh struct {
		oe     *offEntry
		fields []fieldText
	}
	var news []fresh
	for _, v := range vendors {
		for _, t := range changed[v] {
			oe, fs := nx.entryFields(registry.Entry{Name: t.Catalog, Tool: t}, keywords)
			news = append(news, fresh{oe, fs})
		}
	}
	for _, f := range news {
		if !nx.takeWords(f.oe, lost) {
			return nil
		}
	}
	for w := range lost {
		if hw, ok := baseDict.words[w]; !ok || hw.function {
			return nil // the dictionary would lose it
		}
	}

	// Give them slots (their vendor's old ones first) and index them.
	nx.free = append(nx.free, reuse...)
	slices.Sort(nx.free)
	adds := map[string][]posting{}
	addsB := map[string][]posting{}
	added := make([]int, 0, len(news))
	next := 0
	for _, v := range vendors {
		tools := changed[v]
		if len(tools) == 0 {
			continue
		}
		part := &vendorPart{tools: tools, fp: vendorKeywordsFP(tools, keywords)}
		for range tools {
			f := news[next]
			next++
			var slot int
			if len(nx.free) > 0 {
				slot, nx.free = nx.free[0], nx.free[1:]
			} else {
				slot = len(nx.entries)
				nx.entries = append(nx.entries, nil)
			}
			nx.entries[slot] = f.oe
			m, bm := nx.postings(slot, f.oe, f.fields)
			for k, p := range m {
				adds[k] = append(adds[k], p)
				touched[k] = true
			}
			for k, p := range bm {
				addsB[k] = append(addsB[k], p)
				touchedB[k] = true
			}
			nx.chain(f.oe)
			part.slots = append(part.slots, slot)
			added = append(added, slot)
		}
		nx.vendors.Set(v, part)
		nx.fp += mixFP(v, part.fp)
	}
	repost(nx.post, touched, removed, adds)
	repost(nx.bigrams, touchedB, removed, addsB)
	nx.reorder(removed, added)
	if len(nx.free) > len(nx.order) {
		return nil // mostly free: build it whole, compact
	}
	return &nx
}

// repost gives each touched key of m its postings without the removed
// slots' and with adds'; a key left with none is deleted.
func repost(m *cowmap.Map[[]posting], touched map[string]bool, removed map[int]bool, adds map[string][]posting) {
	for k := range touched {
		old, _ := m.Get(k)
		ps := make([]posting, 0, len(old)+len(adds[k]))
		for _, p := range old {
			if !removed[p.entry] {
				ps = append(ps, p)
			}
		}
		ps = append(ps, adds[k]...)
		if len(ps) == 0 {
			m.Delete(k)
		} else {
			m.Set(k, ps)
		}
	}
}

// dropWords counts oe's Chinese keywords, phrases and stems out, adding
// to lost the Chinese keywords no entry has any more.
func (ix *offlineIndex) dropWords(oe *offEntry, lost map[string]bool) {
	for _, w := range oe.hanWords {
		if n, _ := ix.hanRefs.Get(w); n <= 1 {
			ix.hanRefs.Delete(w)
			lost[w] = true
		} else {
			ix.hanRefs.Set(w, n-1)
		}
	}
	for _, p := range oe.phrases {
		if n, _ := ix.phrases.Get(p); n <= 1 {
			ix.phrases.Delete(p)
		} else {
			ix.phrases.Set(p, n-1)
		}
	}
	for _, s := range oe.vocab {
		if n, _ := ix.vocab.Get(s); n.refs <= 1 {
			ix.vocab.Delete(s)
		} else {
			n.refs--
			ix.vocab.Set(s, n)
		}
	}
}

// takeWords counts oe's Chinese keywords and phrases in; false when a
// Chinese keyword would change the dictionary (ix.dict is shared with the
// index it was made from, and every entry's text was read with it).
func (ix *offlineIndex) takeWords(oe *offEntry, lost map[string]bool) bool {
	for _, w := range oe.hanWords {
		if n, _ := ix.hanRefs.Get(w); n == 0 && !lost[w] {
			if hw, ok := ix.dict.words[w]; !ok || hw.function {
				return false
			}
		}
	}
	for _, w := range oe.hanWords {
		n, _ := ix.hanRefs.Get(w)
		ix.hanRefs.Set(w, n+1)
		delete(lost, w)
	}
	for _, p := range oe.phrases {
		n, _ := ix.phrases.Get(p)
		ix.phrases.Set(p, n+1)
		ix.maxWords = max(ix.maxWords, len(splitWords(p)))
	}
	return true
}

// reorder makes order and pos again: the removed slots out, the added ones
// (vendor tools, none a capability) put in by catalog name, each found by
// binary search among the tools.
func (ix *offlineIndex) reorder(removed map[int]bool, added []int) {
	name := func(slot int) string { return ix.entries[slot].e.Name }
	slices.SortFunc(added, func(a, b int) int { return strings.Compare(name(a), name(b)) })
	kept := make([]int, 0, len(ix.order))
	for _, slot := range ix.order {
		if !removed[slot] {
			kept = append(kept, slot)
		}
	}
	caps := 0 // capabilities come first
	for caps < len(kept) && ix.entries[kept[caps]].e.Tool == nil {
		caps++
	}
	order := make([]int, 0, len(kept)+len(added))
	from := 0
	for _, slot := range added {
		at, _ := slices.BinarySearchFunc(kept[caps:], name(slot), func(s int, n string) int { return strings.Compare(name(s), n) })
		order = append(order, kept[from:caps+at]...)
		order = append(order, slot)
		from = caps + at
	}
	order = append(order, kept[from:]...)
	ix.order = order
	ix.pos = make([]int32, len(ix.entries))
	for i, slot := range order {
		ix.pos[slot] = int32(i)
	}
}
