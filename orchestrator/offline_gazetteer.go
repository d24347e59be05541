package orchestrator

import (
	_ "embed"
	"strings"
)

// gazetteerText lists place names of the world in Chinese and English
// (gazetteer.txt): the Chinese names are words of the segmenter's
// dictionary, and their English names name enum values (日本 → "jp Japan").
//
//go:embed gazetteer.txt
var gazetteerText string

// landmarksText lists landmarks, districts, stations and airports of the
// world's cities in Chinese and English (landmarks.txt).
//
//go:embed landmarks.txt
var landmarksText string

// englishPlaceNames are the gazetteer's English names, lower-case ("new
// york", "cape town", "tokyo"): typed in lower case they are still places.
// maxPlaceWords is the most words one has.
var (
	englishPlaceNames = map[string]bool{}
	maxPlaceWords     int
)

// gazetteerSpan returns how many words at toks[i] make an English name of
// the gazetteer of more than one word, or 0.
func gazetteerSpan(toks []token, i int) int {
	if n := gazetteerName(toks, i); n > 1 {
		return n
	}
	return 0
}

// gazetteerName returns how many words at toks[i] make an English name of
// the gazetteer, or 0. A single word is a name only when it is no function
// word and not one of ambiguousPlaceNames ("nice").
func gazetteerName(toks []token, i int) int {
	for n := min(maxPlaceWords, len(toks)-i); n > 0; n-- {
		words := make([]string, 0, n)
		for _, t := range toks[i : i+n] {
			if t.kind != tWord {
				break
			}
			words = append(words, foldAccents(strings.ToLower(t.text)))
		}
		if len(words) == n && englishPlaceNames[strings.Join(words, " ")] && (n > 1 || !toks[i].stop && !ambiguousPlaceNames[words[0]]) {
			return n
		}
	}
	return 0
}

func init() {
	for _, line := range strings.Split(gazetteerText, "\n") {
		zh, en, _, ok := gazetteerLine(line)
		if !ok {
			continue
		}
		first, _, _ := strings.Cut(en, ",")
		addEnglishPlaces(en)
		for _, w := range strings.Split(zh, ",") {
			if w = strings.TrimSpace(w); w != "" {
				hanPlaceNames[w] = strings.TrimSuffix(strings.TrimSpace(first), "*")
				baseDict.add(w, hanWord{place: true})
			}
		}
	}
	// A landmark is a place word of the dictionary and an English place
	// name, but no city: 上海外滩 stays one name (innermostPlace splits
	// only names of the gazetteer), and no enum value is named by it.
	for _, line := range strings.Split(landmarksText, "\n") {
		zh, en, rest, ok := gazetteerLine(line)
		if !ok {
			continue
		}
		addEnglishPlaces(en)
		for _, w := range strings.Split(zh, ",") {
			if w = strings.TrimSpace(w); w != "" {
				baseDict.add(w, hanWord{place: true})
			}
		}
		city := strings.ToLower(strings.TrimSpace(rest))
		for _, n := range strings.Split(en, ",") {
			if n = strings.ToLower(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(n), "*"))); n != "" && city != "" {
				landmarkCity[n] = city
			}
		}
	}
}

// placeNamesByLen are the one-word names of englishPlaceNames that are not
// ambiguous, by their length in bytes (gluedIn looks one letter off).
var placeNamesByLen = map[int][]string{}

func init() {
	for name := range englishPlaceNames {
		if !strings.Contains(name, " ") && !ambiguousPlaceNames[name] {
			placeNamesByLen[len(name)] = append(placeNamesByLen[len(name)], name)
		}
	}
}

// landmarkCity is the city of a landmark's English name, lower-case
// ("marina bay sands" → "singapore").
var landmarkCity = map[string]string{}

// qualifies says whether place q only says where place p is: the city of
// a landmark ("Marina Bay Sands, Singapore").
func qualifies(p, q string) bool {
	c := landmarkCity[strings.ToLower(p)]
	return c != "" && c == strings.ToLower(q)
}

// gazetteerLine splits a line of gazetteer.txt or landmarks.txt into its
// Chinese names, English names and the rest; ok is false for a comment or
// a blank line.
func gazetteerLine(line string) (zh, en, rest string, ok bool) {
	line = strings.TrimSpace(line)
	if line == "" || strings.HasPrefix(line, "#") {
		return "", "", "", false
	}
	zh, en, _ = strings.Cut(line, "\t")
	en, rest, _ = strings.Cut(en, "\t")
	return zh, en, rest, true
}

// addEnglishPlaces adds the comma-separated names of en to
// englishPlaceNames, a name ending in "*" to ambiguousPlaceNames too.
func addEnglishPlaces(en string) {
	for _, n := range strings.Split(en, ",") {
		n, amb := strings.CutSuffix(strings.TrimSpace(n), "*")
		if f := strings.Fields(strings.ToLower(n)); len(f) > 0 {
			name := strings.Join(f, " ")
			englishPlaceNames[name] = true
			maxPlaceWords = max(maxPlaceWords, len(f))
			if amb {
				ambiguousPlaceNames[name] = true
			}
		}
	}
}

// ambiguousPlaceNames are names of the gazetteer that are also common
// words: read as places only capitalised or after "in", "to", "from".
var ambiguousPlaceNames = map[string]bool{"nice": true, "turkey": true, "china": true, "chad": true, "jordan": true, "georgia": true, "reading": true, "bath": true, "split": true, "mobile": true, "orange": true, "la": true, "rio": true}

// accentFolds are the accented letters of place names typed with them or
// without ("são paulo", "kraków", "zürich").
var accentFolds = strings.NewReplacer("á", "a", "à", "a", "â", "a", "ã", "a", "ä", "a", "å", "a", "ç", "c", "é", "e", "è", "e", "ê", "e", "ë", "e",
	"í", "i", "ì", "i", "î", "i", "ï", "i", "ñ", "n", "ó", "o", "ò", "o", "ô", "o", "õ", "o", "ö", "o", "ø", "o", "ú", "u", "ù", "u", "û", "u",
	"ü", "u", "ý", "y", "ł", "l", "ś", "s", "ź", "z", "ż", "z", "ć", "c", "ń", "n", "ę", "e", "ą", "a", "š", "s", "č", "c", "ž", "z", "ř", "r")

func foldAccents(s string) string { return accentFolds.Replace(s) }
