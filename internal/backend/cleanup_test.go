package backend

import (
	"errors"
	"slices"
	"testing"
)

func TestCleanupsCloseLastFirstOnce(t *testing.T) {
	var c Cleanups
	var got []int
	boom := errors.New("boom")
	c.AddFunc(func() { got = append(got, 1) })
	c.Add(func() error { got = append(got, 2); return boom })
	c.AddFunc(func() { got = append(got, 3) })
	if err := c.Close(); !errors.Is(err, boom) {
		t.Errorf("Close = %v, want %v", err, boom)
	}
	if err := c.Close(); err != nil {
		t.Errorf("second Close = %v, want nil", err)
	}
	if want := []int{3, 2, 1}; !slices.Equal(got, want) {
		t.Errorf("ran %v, want %v", got, want)
	}
}
