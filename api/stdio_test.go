package api

import (
	"bufio"
	"encoding/json"
	"io"
	"strings"
	"testing"
)

func TestServeStdio(t *testing.T) {
	s, _ := newTestServer(t)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- s.ServeStdio(t.Context(), DefaultTenant, inR, outW); outW.Close() }()
	sc := bufio.NewScanner(outR)
	sc.Buffer(nil, 1<<20)
	send := func(msg string) map[string]any {
		t.Helper()
		if _, err := io.WriteString(inW, msg+"\n"); err != nil {
			t.Fatal(err)
		}
		for sc.Scan() {
			var m map[string]any
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				t.Fatalf("stdout line is not JSON: %q", sc.Text())
			}
			if m["id"] != nil { // skip notifications
				return m
			}
		}
		t.Fatalf("stdout closed: %v", sc.Err())
		return nil
	}
	init := send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if init["result"] == nil {
		t.Fatalf("initialize: %v", init)
	}
	io.WriteString(inW, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
	list := send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	if !strings.Contains(toJSON(list), "weather-a__current_weather") {
		t.Errorf("tools/list = %v", list)
	}
	ok := send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"weather-a__current_weather","arguments":{"city":"Oslo"}}}`)
	if !strings.Contains(toJSON(ok), "sunny in Oslo") || !strings.Contains(toJSON(ok), MetaProvenance) {
		t.Errorf("tools/call = %v", ok)
	}
	bad := send(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"weather-a__current_weather","arguments":{"city":1}}}`)
	if e, _ := bad["error"].(map[string]any); e == nil || e["code"] != float64(rpcInvalidParams) {
		t.Errorf("schema violation on stdio = %v, want -32602", bad)
	}
	inW.Close()
	if err := <-done; err != nil {
		t.Errorf("ServeStdio: %v", err)
	}
}
