package auth

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// MemoryStore is a [Store] in process memory.
type MemoryStore struct {
	mu   sync.Mutex
	keys map[string]Key
}

var _ Store = (*MemoryStore)(nil)

// NewMemoryStore returns an empty store.
func NewMemoryStore() *MemoryStore { return &MemoryStore{keys: map[string]Key{}} }

func (s *MemoryStore) PutKey(_ context.Context, k Key) error {
	if err := k.Validate(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keys[k.ID] = k
	return nil
}

func (s *MemoryStore) GetKey(_ context.Context, id string) (Key, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k, ok := s.keys[id]
	if !ok {
		return Key{}, fmt.Errorf("%w: %q", ErrNotFound, id)
	}
	return k, nil
}

func (s *MemoryStore) ListKeys(_ context.Context) ([]Key, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Key, 0, len(s.keys))
	for _, k := range s.keys {
		out = append(out, k)
	}
	slices.SortFunc(out, func(a, b Key) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

func (s *MemoryStore) Close() error { return nil }
