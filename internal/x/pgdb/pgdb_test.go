package pgdb_test

import (
	"strings"
	"testing"
	"time"

	"github.com/toolhub/toolhub/internal/x/pgdb"
	"github.com/toolhub/toolhub/internal/x/pgtest"
)

func TestOpenSetsSearchPathAndTimeout(t *testing.T) {
	schema := pgtest.Schema(t)
	pool, cfg, err := pgdb.Open(t.Context(), pgtest.DSN(t), &pgdb.Options{Schema: schema, MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if cfg.MaxConns != 2 {
		t.Errorf("MaxConns = %d, want 2", cfg.MaxConns)
	}
	if cfg.ConnConfig.ConnectTimeout != pgdb.DefaultConnectTimeout {
		t.Errorf("ConnectTimeout = %v, want %v", cfg.ConnConfig.ConnectTimeout, pgdb.DefaultConnectTimeout)
	}
	var path string
	if err := pool.QueryRow(t.Context(), `SHOW search_path`).Scan(&path); err != nil {
		t.Fatal(err)
	}
	if want := `"` + schema + `"`; path != want && path != schema {
		t.Errorf("search_path = %s, want %s", path, want)
	}
}

func TestConfig(t *testing.T) {
	cfg, err := pgdb.Config("postgres://u:pw@127.0.0.1:5432/db?connect_timeout=3", &pgdb.Options{Schema: "s"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ConnConfig.ConnectTimeout != 3*time.Second {
		t.Errorf("the DSN's connect_timeout is not kept: %v", cfg.ConnConfig.ConnectTimeout)
	}
	for _, tt := range []struct{ name, dsn, schema, want string }{
		{"empty schema", "postgres://u:secret@127.0.0.1/db", "", `open 127.0.0.1:5432/db schema "": a schema name`},
		{"long schema", "postgres://u:secret@127.0.0.1/db", strings.Repeat("s", 64), `open 127.0.0.1:5432/db schema`},
		{"bad dsn", "postgres://u:secret@127.0.0.1:port/db", "s", "open: "},
	} {
		_, err := pgdb.Config(tt.dsn, &pgdb.Options{Schema: tt.schema})
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) || strings.Contains(err.Error(), "secret") {
			t.Errorf("%s: error %v, want it to start with %q and hide the password", tt.name, err, tt.want)
		}
	}
}
