package pgschema_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/toolhub/toolhub/internal/x/pgschema"
	"github.com/toolhub/toolhub/internal/x/pgtest"
)

func TestMigrate(t *testing.T) {
	schema := pgtest.Schema(t)
	v1 := [][]string{{`CREATE TABLE {s}.things (id text PRIMARY KEY)`}}
	v2 := append(v1, []string{`ALTER TABLE {s}.things ADD COLUMN n int NOT NULL DEFAULT 0`})
	open := func(component string, m [][]string) error {
		pool, _, err := pgschema.Open(t.Context(), pgtest.DSN(t), schema, component, 2, m)
		if err == nil {
			pool.Close()
		}
		return err
	}
	// Hubs starting at once: one creates, the others find it done.
	errs := make(chan error, 4)
	for range 4 {
		go func() { errs <- open("things", v1) }()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if err := open("things", v2); err != nil {
		t.Fatal(err)
	}
	if err := open("other", [][]string{{`CREATE TABLE {s}.others (id text)`}}); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(t.Context(), pgtest.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(t.Context(), `INSERT INTO `+pgx.Identifier{schema}.Sanitize()+`.things (id, n) VALUES ('a', 1)`); err != nil {
		t.Errorf("version 2's column: %v", err)
	}
	// An older toolhub refuses tables it does not know.
	if err := open("things", v1); err == nil || !strings.Contains(err.Error(), "things tables are at version 2, newer than this toolhub knows (1)") {
		t.Errorf("an older toolhub: err = %v", err)
	}
	if err := open("x", nil); err != nil {
		t.Errorf("no migrations: %v", err)
	}
	if _, _, err := pgschema.Open(t.Context(), "postgres://nobody:hunter2@127.0.0.1:1/none?connect_timeout=5", "s", "x", 1, v1); err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("an unreachable database: %v", err)
	}
}
