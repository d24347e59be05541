package pgaudit_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/toolhub/toolhub/audit"
	"github.com/toolhub/toolhub/audit/audittest"
	"github.com/toolhub/toolhub/audit/pgaudit"
	"github.com/toolhub/toolhub/internal/x/pgtest"
)

func open(t *testing.T, schema string) *pgaudit.Log {
	t.Helper()
	l, err := pgaudit.Open(t.Context(), pgtest.DSN(t), &pgaudit.Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func TestContract(t *testing.T) {
	schemas := map[audit.Log]string{}
	audittest.Run(t,
		func(t *testing.T) audit.Log {
			s := pgtest.Schema(t)
			l := open(t, s)
			schemas[l] = s
			return l
		},
		func(t *testing.T, l audit.Log) audit.Log { return open(t, schemas[l]) },
	)
}

// The table refuses to forget: no UPDATE, DELETE or TRUNCATE.
func TestAppendOnly(t *testing.T) {
	schema := pgtest.Schema(t)
	l := open(t, schema)
	if err := l.Append(t.Context(), audit.Entry{At: time.Now(), Action: "key.revoke", Target: "x"}); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(t.Context(), pgtest.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	table := pgx.Identifier{schema}.Sanitize() + ".audit_log"
	for _, stmt := range []string{`UPDATE ` + table + ` SET target = 'y'`, `DELETE FROM ` + table, `TRUNCATE ` + table} {
		if _, err := conn.Exec(t.Context(), stmt); err == nil || !strings.Contains(err.Error(), "append-only") {
			t.Errorf("%s: err = %v, want a refusal", stmt, err)
		}
	}
	if got, err := l.Recent(t.Context(), 0); err != nil || len(got) != 1 || got[0].Target != "x" {
		t.Errorf("after the refused changes: %v, %v", got, err)
	}
}
