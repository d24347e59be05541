package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"

	"github.com/toolhub/toolhub/auth"
	"github.com/toolhub/toolhub/internal/app"
	"github.com/toolhub/toolhub/internal/config"
)

// keys manages API keys directly in the hubs' key store (the data
// folder's, or PostgreSQL's when postgres is set), so the first operator
// key can be made before authentication is switched on.
func keys(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	verb := "list"
	if len(args) > 0 && args[0] != "" && args[0][0] != '-' {
		verb, args = args[0], args[1:]
	}
	fs := flags("keys "+verb, "[create|list|rotate|revoke] [flags]", "Manage API keys in the data folder, or in PostgreSQL when the config sets postgres (running hubs see changes at once).\n  create --role tenant|vendor|operator|finance [--tenant T | --vendor V] [--name N] [--ttl 720h]\n  list\n  rotate --id ID\n  revoke --id ID\nA new token is printed once; only its hash is stored.", stderr)
	cfgPath := fs.String("config", os.Getenv("TOOLHUB_CONFIG"), "config file; its postgres, or else its data folder, holds the keys")
	data := fs.String("data", "", "data folder, overrides the config's")
	role := fs.String("role", "", "create: tenant, vendor, operator or finance")
	tenant := fs.String("tenant", "", "create: the tenant of a tenant key")
	vendor := fs.String("vendor", "", "create: the vendor of a vendor key")
	name := fs.String("name", "", "create: a name to recognise the key by")
	ttl := fs.Duration("ttl", 0, "create: lifetime (e.g. 720h); 0: no expiry")
	id := fs.String("id", "", "rotate, revoke: the key id")
	if err := fs.Parse(args); err != nil {
		return err
	}
	switch verb {
	case "create", "list", "rotate", "revoke":
	default:
		fmt.Fprintf(stderr, "toolhub keys: unknown subcommand %q\n\n", verb)
		fs.Usage()
		return errUsage
	}
	cfg, err := config.Load(*cfgPath)
	if err != nil {
		return err
	}
	if *data != "" {
		cfg.Data = *data
	}
	// The hubs' key store: PostgreSQL when the config sets postgres, else
	// the data folder's keys.db.
	s, err := app.OpenKeys(ctx, cfg)
	if err != nil {
		return err
	}
	defer s.Close()
	switch verb {
	case "create":
		tok, k, err := auth.Issue(ctx, s, auth.Key{Role: *role, Tenant: *tenant, Vendor: *vendor, Name: *name}, *ttl)
		if err != nil {
			return err
		}
		return showNewKey(stdout, stderr, tok, k)
	case "rotate":
		tok, k, err := auth.Rotate(ctx, s, *id)
		if err != nil {
			return err
		}
		return showNewKey(stdout, stderr, tok, k)
	case "revoke":
		return auth.Revoke(ctx, s, *id)
	case "list":
		return listKeys(ctx, s, stdout)
	}
	fs.Usage()
	return errUsage
}

// showNewKey prints a key just issued, with its token, once.
func showNewKey(stdout, stderr io.Writer, tok string, k auth.Key) error {
	fmt.Fprintf(stdout, "key %s (%s", k.ID, k.Role)
	if k.Tenant+k.Vendor != "" {
		fmt.Fprintf(stdout, " %s%s", k.Tenant, k.Vendor)
	}
	fmt.Fprintln(stdout, ")")
	fmt.Fprintln(stdout, tok)
	fmt.Fprintln(stderr, "This token is shown once; store it now. Send it as: Authorization: Bearer <token>")
	return nil
}

// listKeys prints the store's keys as a table, with each one's state.
func listKeys(ctx context.Context, s auth.Store, stdout io.Writer) error {
	ks, err := s.ListKeys(ctx)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tROLE\tSUBJECT\tNAME\tCREATED\tEXPIRES\tSTATE")
	for _, k := range ks {
		state, exp := "active", "-"
		if k.ExpiresAt != nil {
			exp = k.ExpiresAt.Format(time.RFC3339)
			if !time.Now().Before(*k.ExpiresAt) {
				state = "expired"
			}
		}
		if k.RevokedAt != nil {
			state = "revoked"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", k.ID, k.Role, orDash(k.Tenant+k.Vendor), orDash(k.Name), k.CreatedAt.Format(time.RFC3339), exp, state)
	}
	return tw.Flush()
}
