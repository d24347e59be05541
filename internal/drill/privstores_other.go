//go:build !unix

package drill

import (
	"context"
	"errors"
)

// errPrivateStores: [StoreFaults] hangs and stops stores with signals.
var errPrivateStores = errors.New("drill: the store faults drill needs a unix system (it hangs Redis with SIGSTOP)")

type privateServer struct{ addr string }

func startPrivateRedis(context.Context, string) (*privateServer, error) {
	return nil, errPrivateStores
}

func startPrivatePostgres(context.Context, string) (*privateServer, error) {
	return nil, errPrivateStores
}

func (s *privateServer) dsn(string) string           { return "" }
func (s *privateServer) start(context.Context) error { return errPrivateStores }
func (s *privateServer) hang() error                 { return errPrivateStores }
func (s *privateServer) resume() error               { return errPrivateStores }
func (s *privateServer) stop() error                 { return errPrivateStores }
func (s *privateServer) kill()                       {}
