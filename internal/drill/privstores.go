//go:build unix

package drill

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
)

// A privateServer is a redis-server or postgres process of the drill's
// own, in a folder of its own on a port of its own, so that it can be
// hung (SIGSTOP) or stopped without touching a store anyone else uses.
// It keeps its data across a stop and a start.
type privateServer struct {
	name string   // "redis" or "postgres"
	argv []string // the command that starts it
	cred *syscall.Credential
	addr string // 127.0.0.1:port
	log  string // its output, appended over restarts

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

// findBinary finds a store's executable on PATH or, for PostgreSQL, in
// the Debian layout (/usr/lib/postgresql/<version>/bin).
func findBinary(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	if m, _ := filepath.Glob("/usr/lib/postgresql/*/bin/" + name); len(m) > 0 {
		return m[len(m)-1], nil
	}
	return "", fmt.Errorf("drill: %s not found on PATH (install Redis and PostgreSQL: make services)", name)
}

// startPrivateRedis starts a redis-server in dir with an append-only
// file, so a stop (SIGTERM) and a start keep the jobs' streams.
func startPrivateRedis(ctx context.Context, dir string) (*privateServer, error) {
	bin, err := findBinary("redis-server")
	if err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	s := &privateServer{name: "redis", addr: fmt.Sprintf("127.0.0.1:%d", port), log: filepath.Join(dir, "redis.log"),
		argv: []string{bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir, "--save", "",
			"--appendonly", "yes", "--appendfsync", "everysec", "--daemonize", "no"}}
	return s, s.start(ctx)
}

// startPrivatePostgres creates a cluster in dir (trust authentication,
// user postgres, database test) and starts it. PostgreSQL refuses to run
// as root: as root the cluster belongs to, and runs as, the postgres user.
func startPrivatePostgres(ctx context.Context, dir string) (*privateServer, error) {
	initdb, err := findBinary("initdb")
	if err != nil {
		return nil, err
	}
	postgres, err := findBinary("postgres")
	if err != nil {
		return nil, err
	}
	data := filepath.Join(dir, "pgdata")
	s := &privateServer{name: "postgres", log: filepath.Join(dir, "postgres.log")}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return nil, fmt.Errorf("drill: PostgreSQL does not run as root and there is no postgres user: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		s.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(dir, uid, gid); err != nil {
			return nil, err
		}
		// The postgres user must reach dir through its parent.
		if err := os.Chmod(filepath.Dir(dir), 0o711); err != nil {
			return nil, err
		}
	}
	init := exec.CommandContext(ctx, initdb, "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync", "--no-instructions")
	init.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	if out, err := init.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("drill: initdb: %w\n%s", err, out)
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	s.addr = fmt.Sprintf("127.0.0.1:%d", port)
	s.argv = []string{postgres, "-D", data, "-p", strconv.Itoa(port), "-k", dir, "-c", "listen_addresses=127.0.0.1",
		"-c", "fsync=off", "-c", "max_connections=200"}
	if err := s.start(ctx); err != nil {
		return nil, err
	}
	// The database the hubs use.
	conn := s.dsn("postgres")
	if err := createDatabase(ctx, conn, "test"); err != nil {
		s.kill()
		return nil, err
	}
	return s, nil
}

// dsn is the URL of database db on a private PostgreSQL.
func (s *privateServer) dsn(db string) string {
	return fmt.Sprintf("postgres://postgres@%s/%s?sslmode=disable", s.addr, db)
}

// start runs the server and waits until it accepts connections.
func (s *privateServer) start(ctx context.Context) error {
	logf, err := os.OpenFile(s.log, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(s.argv[0], s.argv[1:]...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred, Setpgid: true}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("drill: start %s: %w", s.name, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); logf.Close(); close(done) }()
	s.mu.Lock()
	s.cmd, s.done = cmd, done
	s.mu.Unlock()
	_, err = waitFor(ctx, 60*time.Second, func() bool {
		select {
		case <-done:
			return true
		default:
		}
		return s.answers(ctx)
	})
	select {
	case <-done:
		return fmt.Errorf("drill: %s exited at start:\n%s", s.name, s.tail(20))
	default:
	}
	if err != nil {
		s.kill()
		return fmt.Errorf("drill: %s did not accept connections: %w\n%s", s.name, err, s.tail(20))
	}
	return nil
}

// answers reports whether the server answers a ping (Redis) or a query
// (PostgreSQL), not just accepts a connection.
func (s *privateServer) answers(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if s.name == "redis" {
		return pingRedis(ctx, s.addr) == nil
	}
	return pingPostgres(ctx, s.dsn("postgres")) == nil
}

// signal sends sig to the running server.
func (s *privateServer) signal(sig syscall.Signal) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return fmt.Errorf("drill: %s is not running", s.name)
	}
	return s.cmd.Process.Signal(sig)
}

// hang stops the server (SIGSTOP): connections to it stall.
func (s *privateServer) hang() error { return s.signal(syscall.SIGSTOP) }

// resume continues a hung server (SIGCONT).
func (s *privateServer) resume() error { return s.signal(syscall.SIGCONT) }

// stop shuts the server down cleanly (Redis: SIGTERM, which writes its
// append-only file; PostgreSQL: SIGINT, a fast shutdown) and waits.
func (s *privateServer) stop() error {
	sig := syscall.SIGTERM
	if s.name == "postgres" {
		sig = syscall.SIGINT
	}
	if err := s.signal(sig); err != nil {
		return err
	}
	s.mu.Lock()
	done := s.done
	s.mu.Unlock()
	select {
	case <-done:
		s.mu.Lock()
		s.cmd = nil
		s.mu.Unlock()
		return nil
	case <-time.After(30 * time.Second):
		s.kill()
		return fmt.Errorf("drill: %s did not stop within 30s", s.name)
	}
}

// kill ends the server (and anything it forked) at once; for clean-up.
func (s *privateServer) kill() {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGCONT)
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	<-done
}

func (s *privateServer) tail(n int) string {
	b, _ := os.ReadFile(s.log)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

func pingRedis(ctx context.Context, addr string) error {
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer c.Close()
	return c.Ping(ctx).Err()
}

func pingPostgres(ctx context.Context, dsn string) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	return conn.Ping(ctx)
}

func createDatabase(ctx context.Context, dsn, name string) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
	return err
}
