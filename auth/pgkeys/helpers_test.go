package pgkeys_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/toolhub/toolhub/internal/x/pgtest"
)

// exec runs one statement on a connection of its own.
func exec(t testing.TB, sql string, args ...any) error {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), pgtest.DSN(t))
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(t.Context(), sql, args...)
	return err
}

// revokeSilently revokes a key with plain SQL: no notification.
func revokeSilently(t testing.TB, schema, id string) error {
	return exec(t, `UPDATE `+pgx.Identifier{schema}.Sanitize()+`.api_keys SET revoked_at = now() WHERE id = $1`, id)
}
