// Package deploy holds what runs toolhub outside `go run`: the compose
// stack's config and balancer, and Prometheus alerts. Its tests check the
// files the repository ships (Docker itself cannot run here).
package deploy

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/toolhub/toolhub/internal/config"
	"go.yaml.in/yaml/v3"
)

// TestComposeFile: compose.yaml parses, names three toolhub instances, a
// balancer, Redis and PostgreSQL, and wires them to each other.
func TestComposeFile(t *testing.T) {
	b, err := os.ReadFile("../compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Services map[string]struct {
			Build     any               `yaml:"build"`
			Image     string            `yaml:"image"`
			Ports     []string          `yaml:"ports"`
			Volumes   []string          `yaml:"volumes"`
			DependsOn any               `yaml:"depends_on"`
			Env       map[string]string `yaml:"environment"`
		} `yaml:"services"`
		Volumes map[string]any `yaml:"volumes"`
	}
	if err := yaml.Unmarshal(b, &c); err != nil {
		t.Fatalf("compose.yaml: %v", err)
	}
	var names []string
	for n := range c.Services {
		names = append(names, n)
	}
	slices.Sort(names)
	want := []string{"lb", "postgres", "redis", "toolhub-1", "toolhub-2", "toolhub-3"}
	if !slices.Equal(names, want) {
		t.Fatalf("services %v, want %v", names, want)
	}
	for _, n := range []string{"toolhub-1", "toolhub-2", "toolhub-3"} {
		s := c.Services[n]
		if s.Build == nil || s.Env["TOOLHUB_CONFIG"] != "/etc/toolhub/toolhub.yaml" {
			t.Errorf("%s: built from the Dockerfile with the shared config? %+v", n, s)
		}
		deps, _ := s.DependsOn.(map[string]any)
		if deps["redis"] == nil || deps["postgres"] == nil {
			t.Errorf("%s does not wait for redis and postgres: %v", n, s.DependsOn)
		}
		if !slices.ContainsFunc(s.Volumes, func(v string) bool { return strings.HasSuffix(v, ":/var/lib/toolhub") }) {
			t.Errorf("%s has no data volume of its own: %v", n, s.Volumes)
		}
	}
	if lb := c.Services["lb"]; len(lb.Ports) != 1 || !strings.HasPrefix(lb.Ports[0], "127.0.0.1:") {
		t.Errorf("the balancer should publish one port on loopback: %v", lb.Ports)
	}
}

// TestComposeConfigIsValid: the instances' toolhub.yaml passes `toolhub
// config check`, points at the compose services, and the balancer sends
// to all three instances.
func TestComposeConfigIsValid(t *testing.T) {
	if ps := config.CheckFile("compose/toolhub.yaml"); len(ps) != 0 {
		t.Fatalf("compose/toolhub.yaml: %v", ps)
	}
	cfg, err := config.Load("compose/toolhub.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(cfg.Redis, "@redis:") && !strings.Contains(cfg.Redis, "//redis:") || !strings.Contains(cfg.Postgres, "@postgres:") || cfg.Instances != 3 || !cfg.Auth.Enabled {
		t.Errorf("config: redis %q postgres %q instances %d auth %v", cfg.Redis, cfg.Postgres, cfg.Instances, cfg.Auth.Enabled)
	}
	nginx, err := os.ReadFile("compose/nginx.conf")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"toolhub-1:8080", "toolhub-2:8080", "toolhub-3:8080"} {
		if !strings.Contains(string(nginx), "server "+n) {
			t.Errorf("nginx.conf does not balance to %s", n)
		}
	}
}

// TestDockerfile: multi-stage, a static (CGO off) binary, and a final
// stage that runs as a non-root user.
func TestDockerfile(t *testing.T) {
	b, err := os.ReadFile("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	froms := regexp.MustCompile(`(?m)^FROM\s+(\S+)`).FindAllStringSubmatch(string(b), -1)
	if len(froms) < 2 {
		t.Fatalf("want a multi-stage build, got %d stages", len(froms))
	}
	final := string(b)[strings.LastIndex(string(b), "\nFROM "):]
	if !strings.Contains(string(b), "CGO_ENABLED=0") {
		t.Error("the binary is not built static (CGO_ENABLED=0)")
	}
	users := regexp.MustCompile(`(?m)^USER\s+(\S+)`).FindAllStringSubmatch(final, -1)
	if len(users) == 0 || strings.HasPrefix(users[len(users)-1][1], "root") || strings.HasPrefix(users[len(users)-1][1], "0") {
		t.Errorf("the final stage does not run as a non-root user: %v", users)
	}
	if !strings.Contains(final, "ENTRYPOINT") || !strings.Contains(final, "/usr/local/bin/toolhub") {
		t.Error("the final stage does not run toolhub")
	}
}
