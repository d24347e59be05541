package netguard

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestUpdateAppliesToEarlierClients(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	p, sb := sandboxed(t, Options{Allow: []string{"127.0.0.1"}})
	client := p.Client(nil)
	client.Transport.(*http.Transport).DisableKeepAlives = true
	if err := p.CheckURL(t.Context(), srv.URL); err != nil {
		t.Fatalf("allowed before the update: %v", err)
	}
	if err := p.Update(Options{Deny: []string{"foo/"}}); err == nil {
		t.Fatal("an invalid update was taken")
	}
	if err := p.CheckURL(t.Context(), srv.URL); err != nil {
		t.Fatalf("a refused update changed the lists: %v", err)
	}
	if err := p.Update(Options{Allow: []string{"127.0.0.1"}, Deny: []string{"127.0.0.1"}}); err != nil {
		t.Fatal(err)
	}
	if err := p.CheckURL(t.Context(), srv.URL); !errors.Is(err, ErrRefused) {
		t.Errorf("CheckURL after denying 127.0.0.1: %v", err)
	}
	if _, err := client.Get(srv.URL); !errors.Is(err, ErrRefused) {
		t.Errorf("a client made before the update dialled a denied address: %v", err)
	}
	if d := sb.Dials(); len(d) > 0 {
		t.Errorf("dialled %v after the deny", d)
	}
}

func TestDenyWinsOverAnAllowedHostPort(t *testing.T) {
	p, _ := sandboxed(t, Options{Allow: []string{"127.0.0.1:9100", "localhost"}, Deny: []string{"127.0.0.0/8", "::1"}})
	for _, u := range []string{"http://127.0.0.1:9100/mcp", "http://localhost:9100/mcp"} {
		if err := p.CheckURL(t.Context(), u); !errors.Is(err, ErrRefused) {
			t.Errorf("%s: %v, want refused by the deny list", u, err)
		}
	}
}
