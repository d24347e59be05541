package orchestrator

import (
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// The planner's bounds on one request: the goal (bytes and clauses, checked
// by [Planner.admit] before anything is planned), the runs of a tenant at
// once, and the outcome's size (bound, after the run). Issue 32: a 3.5 MB
// goal answered 81 MB, and eight at once took the hub's memory.

// countClauses returns the number of clauses the offline planner reads in
// goal: what it asks for, after argument-only parts ("5" in "add 3 and 5")
// are folded into their neighbours.
func (p *Planner) countClauses(goal string) int {
	var dict *hanDict
	if ix := p.index(); ix != nil {
		dict = ix.dict
	}
	return len(splitClauses(tokenize(hanFold(goal), dict)))
}

// bound cuts out's step results and answer when its JSON is over
// MaxAnswerBytes, and says so in Truncated and Note: each step, the answer
// and the rest get an equal share; a step's structured result over half its
// share is dropped, its text and the answer are cut to what is left.
func (p *Planner) bound(out *Outcome) {
	if out == nil || p.MaxAnswerBytes <= 0 || jsonSize(out) <= p.MaxAnswerBytes {
		return
	}
	max := p.MaxAnswerBytes
	out.Truncated = true
	note := fmt.Sprintf("the outcome was over planner.max_answer_bytes (%d bytes), so step results and the answer were cut; ask for less at once, or call the tools directly", max)
	if out.Note != "" {
		note = out.Note + "; " + note
	}
	out.Note = note
	for share := max / (len(out.Steps) + 2); share >= 16 && jsonSize(out) > max; share /= 2 {
		for i := range out.Steps {
			s := &out.Steps[i]
			sz := 0
			if s.Structured != nil {
				if sz = jsonSize(s.Structured); sz > share/2 {
					s.Structured, sz = nil, 0
				}
			}
			s.Text = cut(s.Text, share-sz)
			if s.Error != nil {
				s.Error.Message = cut(s.Error.Message, share)
			}
		}
		out.Answer = cut(out.Answer, share)
		if out.Error != nil {
			out.Error.Message = cut(out.Error.Message, share)
		}
	}
}

// cut returns s cut to at most n bytes on a rune boundary, with "…" when
// it was cut.
func cut(s string, n int) string {
	const ellipsis = "…"
	if len(s) <= n {
		return s
	}
	n -= len(ellipsis)
	if n <= 0 {
		return ellipsis
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + ellipsis
}

// jsonSize is the length of v's JSON, counted without keeping it.
func jsonSize(v any) int {
	var c countWriter
	if json.NewEncoder(&c).Encode(v) != nil {
		return 0
	}
	return int(c) - 1 // Encode's newline
}

type countWriter int

func (c *countWriter) Write(p []byte) (int, error) {
	*c += countWriter(len(p))
	return len(p), nil
}
