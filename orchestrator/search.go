package orchestrator

import (
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/toolhub/toolhub/registry"
)

// Hit is one catalog entry found by [Planner.Search].
type Hit struct {
	Entry registry.Entry
	// Score is the offline planner's score of the entry for the query:
	// higher is better; it compares hits of one query only.
	Score float64
	// Matched are the query's words that hit the entry, as typed, in
	// query order.
	Matched []string
}

// Search returns up to k entries tenant may see that best answer query,
// ranked as the offline planner ranks them ([Planner.PlanOffline]: one
// index, built once per catalog version and shared), with the evidence
// the planner sets aside (search_evidence.go): first an entry several
// clauses find that scores more than each clause's pick, then the entry
// the planner would pick for each clause of the query (a capability over
// the vendor tools of its chain when it matches nearly as well), then
// every other entry that shares a word with the query, best first (an
// entry scoring the sum of its clauses' scores). k <= 0 means 10.
func (p *Planner) Search(tenant, query string, k int) []Hit {
	if k <= 0 {
		k = 10
	}
	ix := p.search.index(p)
	if ix == nil || strings.TrimSpace(query) == "" {
		return nil
	}
	v := p.visibility()
	visible := func(i int) bool { return v == nil || v.Visible(tenant, ix.entries[i].e) }
	// Rank with every entry visible (visibility is asked only of the
	// entries that match, not of the whole catalog), then keep the
	// tenant's.
	now := p.now()
	clauses := ix.clauses(query, p.search.everyone(ix), now)
	evs := make([][]evidence, len(clauses))
	for ci := range clauses {
		evs[ci] = ix.evidence(query, &clauses[ci], now)
		ix.weigh(&clauses[ci], evs[ci])
	}
	type cand struct {
		m      match
		clause int
	}
	var order []cand
	seen := map[int]bool{}
	take := func(m match, c int) {
		if len(order) < k && !seen[m.entry] && m.score > 0 && visible(m.entry) {
			seen[m.entry] = true
			order = append(order, cand{m, c})
		}
	}
	// An entry several clauses find scores their sum: "这首歌叫什么名字，
	// 帮我识别一下" is one request in two clauses.
	// It goes before the clauses' picks when it scores more than each.
	n := 0
	for _, c := range clauses {
		n += len(c.ranked)
	}
	all := make([]cand, 0, n)
	var at map[int]int
	var picks []cand
	if len(clauses) > 1 {
		at = map[int]int{}
	}
	most, multi := 0.0, map[int]bool{}
	for ci, c := range clauses {
		if c.scored >= 0 {
			picks = append(picks, cand{c.ranked[c.scored], ci})
			most = max(most, c.ranked[c.scored].score)
		}
		for _, m := range c.ranked {
			if at == nil {
				all = append(all, cand{m, ci})
				continue
			}
			j, ok := at[m.entry]
			if !ok {
				at[m.entry] = len(all)
				all = append(all, cand{m, ci})
				continue
			}
			sum := all[j].m.score + m.score
			if m.score > all[j].m.score {
				all[j] = cand{m, ci}
			}
			all[j].m.score = sum
			multi[m.entry] = true
		}
	}
	slices.SortFunc(all, func(a, b cand) int {
		switch {
		case a.m.score > b.m.score:
			return -1
		case a.m.score < b.m.score:
			return 1
		}
		return ix.cmpEntries(a.m.entry, b.m.entry)
	})
	for _, c := range all {
		if c.m.score <= most {
			break
		}
		if multi[c.m.entry] {
			take(c.m, c.clause)
		}
	}
	for _, c := range picks {
		take(c.m, c.clause)
	}
	for _, c := range all {
		if len(order) == k {
			break
		}
		take(c.m, c.clause)
	}
	out := make([]Hit, len(order))
	keys := make([]map[string]int, len(clauses)) // each clause's, read once (typos are looked up)
	for i, c := range order {
		if keys[c.clause] == nil {
			keys[c.clause] = ix.queryKeys(clauses[c.clause].toks)
		}
		matched := matchedWords(ix, clauses[c.clause].toks, keys[c.clause], c.m)
		out[i] = Hit{Entry: ix.entries[c.m.entry].e, Score: c.m.score, Matched: evidenceWords(matched, evs[c.clause], c.m.entry)}
	}
	return out
}

// matchedWords are the words of toks that produced m's keys (keys are
// toks' queryKeys), in order, and the Chinese words whose character pairs
// hit m's entry.
func matchedWords(ix *offlineIndex, toks []token, keys map[string]int, m match) []string {
	var out []string
	seen := map[string]bool{}
	add := func(w string) {
		if w != "" && !seen[w] {
			seen[w] = true
			out = append(out, w)
		}
	}
	type at struct {
		i int
		w string
	}
	var hits []at
	for k, i := range keys {
		if m.keys[k] {
			hits = append(hits, at{i, toks[i].text})
		}
	}
	if m.keys[""] { // character pairs of Chinese text
		for i, t := range toks {
			if t.kind != tHan && t.kind != tHanRaw || t.stop {
				continue
			}
			rs := []rune(t.text)
			for j := 0; j+1 < len(rs); j++ {
				if ps, _ := ix.bigrams.Get(string(rs[j : j+2])); slices.ContainsFunc(ps, func(p posting) bool { return p.entry == m.entry }) {
					hits = append(hits, at{i, t.text})
					break
				}
			}
		}
	}
	slices.SortFunc(hits, func(a, b at) int { return a.i - b.i })
	for _, h := range hits {
		add(h.w)
	}
	return out
}

// searchState holds what Search keeps per index: a visibility of every
// entry, and the index last used with when its keywords were checked.
type searchState struct {
	all atomic.Pointer[allOf]
	cur atomic.Pointer[checkedIndex]
}

type checkedIndex struct {
	ix      *offlineIndex
	checked time.Time
}

// KeywordsRecheck is how often Search checks the configured keywords
// (Planner.Keywords) for a change while the catalog does not change: the
// check reads every entry's keywords, which at 10,000 tools costs more
// than the search itself. A catalog change is seen at once.
const KeywordsRecheck = time.Second

// index is the planner's index, reused without checking the keywords
// again for KeywordsRecheck while the catalog version is the same.
func (s *searchState) index(p *Planner) *offlineIndex {
	now := p.now()
	if c := s.cur.Load(); c != nil && p.Catalog != nil && c.ix.version == p.Catalog.Version() && now.Sub(c.checked) < KeywordsRecheck && !now.Before(c.checked) {
		return c.ix
	}
	ix := p.index()
	if ix != nil {
		s.cur.Store(&checkedIndex{ix: ix, checked: now})
	}
	return ix
}

type allOf struct {
	ix  *offlineIndex
	vis []bool
}

// everyone is a visibility of every entry of ix, made once per index.
func (s *searchState) everyone(ix *offlineIndex) []bool {
	if a := s.all.Load(); a != nil && a.ix == ix {
		return a.vis
	}
	a := &allOf{ix: ix, vis: make([]bool, len(ix.entries))}
	for i, e := range ix.entries {
		a.vis[i] = e != nil
	}
	s.all.Store(a)
	return a.vis
}
