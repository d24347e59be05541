package orchestrator

import (
	_ "embed"
	"strings"
)

// gazetteerText lists place names of the world in Chinese and English
// (gazetteer.txt): the Chinese names are words of the segmenter's
// dictionary, the English ones say that a lower-case word is a place.
//
//go:embed gazetteer.txt
var gazetteerText string

var (
	hanPlaces     = map[string]bool{} // Chinese place names
	englishPlaces = map[string]bool{} // lower-case English place names
	maxPlaceWords = 1                 // longest English place name, in words
)

func init() {
	for _, line := range strings.Split(gazetteerText, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		zh, en, _ := strings.Cut(line, "\t")
		first, _, _ := strings.Cut(en, ",")
		for _, w := range strings.Split(zh, ",") {
			if w = strings.TrimSpace(w); w != "" {
				hanPlaces[w] = true
				hanPlaceNames[w] = strings.TrimSpace(first)
				baseDict.add(w, hanWord{place: true})
			}
		}
		for _, w := range strings.Split(en, ",") {
			if w = strings.ToLower(strings.TrimSpace(w)); w != "" {
				englishPlaces[w] = true
				maxPlaceWords = max(maxPlaceWords, strings.Count(w, " ")+1)
			}
		}
	}
}

// knownPlace reads the longest English place name of the gazetteer at
// toks[i] ("new york", "sao paulo"), whatever its case, and returns its
// length in tokens (0 when there is none).
func knownPlace(toks []token, i int) int {
	var words []string
	n := 0
	for j := i; j < len(toks) && j-i < maxPlaceWords && toks[j].kind == tWord; j++ {
		words = append(words, strings.ToLower(toks[j].text))
		if englishPlaces[strings.Join(words, " ")] {
			n = j - i + 1
		}
	}
	return n
}
