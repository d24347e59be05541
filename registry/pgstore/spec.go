package pgstore

import (
	"bytes"
	"encoding/json"
)

// encodeSpec marshals a spec as compact JSON text. HTML characters are kept
// as they are, so a raw schema is stored as it was registered, less spaces.
func encodeSpec(v any) (string, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	return string(bytes.TrimSuffix(b.Bytes(), []byte("\n"))), nil
}

func decodeSpec(b []byte, v any) error { return json.Unmarshal(b, v) }
