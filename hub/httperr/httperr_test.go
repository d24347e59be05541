package httperr_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/toolhub/toolhub/hub"
	"github.com/toolhub/toolhub/hub/httperr"
)

func TestWrite(t *testing.T) {
	const secret = "sqlite: database disk image is malformed (/var/lib/toolhub/ledger.db)"
	tests := []struct {
		name       string
		err        error
		callID     string
		status     int
		code       hub.Code
		message    string // "" means httperr.InternalMessage
		retryAfter string
		logged     bool
	}{
		{"typed", &hub.Error{Code: hub.CodeUnknownTool, Message: `unknown tool "x"`}, "", 404, hub.CodeUnknownTool, `unknown tool "x"`, "", false},
		{"wrapped typed", fmt.Errorf("serving: %w", &hub.Error{Code: hub.CodeConflict, Message: "job is running"}), "", 409, hub.CodeConflict, "job is running", "", false},
		{"retry after, rounded up to a second", &hub.Error{Code: hub.CodeRateLimited, Message: "slow down", RetryAfter: 1500 * time.Millisecond}, "c1", 429, hub.CodeRateLimited, "slow down", "2", false},
		{"untyped", errors.New(secret), "", 500, hub.CodeInternal, "", "", true},
		{"typed internal", &hub.Error{Code: hub.CodeInternal, Message: "store: " + secret}, "c2", 500, hub.CodeInternal, "", "", true},
		{"a code no table knows", &hub.Error{Code: "mystery", Message: secret}, "", 500, hub.CodeInternal, "", "", true},
		{"deadline", fmt.Errorf("ledger: %w", context.DeadlineExceeded), "", 504, hub.CodeTimeout, "deadline exceeded", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var log bytes.Buffer
			l := slog.New(slog.NewJSONHandler(&log, nil))
			r := httptest.NewRequest("GET", "/v1/reports/usage", nil)
			r = r.WithContext(httperr.WithLogger(r.Context(), l))
			w := httptest.NewRecorder()
			httperr.Write(w, r, tt.err, tt.callID)
			if w.Code != tt.status || w.Header().Get("Content-Type") != "application/json" || w.Header().Get("Retry-After") != tt.retryAfter {
				t.Errorf("status %d, Content-Type %q, Retry-After %q; want %d, application/json, %q",
					w.Code, w.Header().Get("Content-Type"), w.Header().Get("Retry-After"), tt.status, tt.retryAfter)
			}
			var body struct{ Error httperr.Body }
			if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
				t.Fatalf("body %q: %v", w.Body, err)
			}
			want := tt.message
			if want == "" {
				want = httperr.InternalMessage
			}
			if b := body.Error; b.Code != tt.code || b.Message != want || b.CallID != tt.callID {
				t.Errorf("body %+v, want code %s, message %q, call_id %q", b, tt.code, want, tt.callID)
			}
			if strings.Contains(w.Body.String(), "sqlite") {
				t.Errorf("the body carries the store's text: %s", w.Body)
			}
			if !tt.logged {
				if log.Len() > 0 {
					t.Errorf("logged %s for a typed error", &log)
				}
				return
			}
			// The log has the text, under the id the client was given.
			var rec map[string]any
			if err := json.Unmarshal(log.Bytes(), &rec); err != nil {
				t.Fatalf("log %q: %v", &log, err)
			}
			id, key := tt.callID, "call_id"
			if id == "" {
				id, key = body.Error.RequestID, "request_id"
			}
			if id == "" || rec[key] != id || !strings.Contains(fmt.Sprint(rec["err"]), secret) || rec["path"] != "/v1/reports/usage" || rec["level"] != "ERROR" {
				t.Errorf("log %v, want level ERROR, %s %q, the error's text and the path", rec, key, id)
			}
		})
	}
}

func TestRPCCode(t *testing.T) {
	tests := []struct {
		code hub.Code
		want int
	}{
		{hub.CodeInvalidArguments, httperr.RPCInvalidParams},
		{hub.CodeUnknownTool, httperr.RPCInvalidParams},
		{hub.CodeInvalidRequest, httperr.RPCInvalidRequest},
		{hub.CodeTooLarge, httperr.RPCInvalidRequest},
		{hub.CodeForbidden, httperr.RPCInvalidRequest},
		{hub.CodeUnavailable, httperr.RPCInternalError},
		{hub.CodeInternal, httperr.RPCInternalError},
	}
	for _, tt := range tests {
		if got := httperr.RPCCode(tt.code); got != tt.want {
			t.Errorf("RPCCode(%s) = %d, want %d", tt.code, got, tt.want)
		}
	}
}
