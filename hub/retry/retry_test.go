package retry

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
)

// fakeTime is a clock whose Sleep records the wait and moves the clock.
type fakeTime struct {
	now   time.Time
	waits []time.Duration
}

func newFakeTime() *fakeTime { return &fakeTime{now: time.Now()} }

func (f *fakeTime) Now() time.Time { return f.now }

func (f *fakeTime) Sleep(ctx context.Context, d time.Duration) error {
	f.waits = append(f.waits, d)
	f.now = f.now.Add(d)
	return ctx.Err()
}

func (f *fakeTime) policy(p Policy) Policy {
	p.Sleep, p.Now = f.Sleep, f.Now
	if p.Rand == nil {
		p.Rand = func() float64 { return 0.5 }
	}
	return p
}

type httpError struct{ code int }

func (e *httpError) Error() string   { return fmt.Sprintf("upstream: HTTP %d", e.code) }
func (e *httpError) HTTPStatus() int { return e.code }

type retryAfterError struct {
	httpError
	after time.Duration
}

func (e *retryAfterError) RetryAfter() time.Duration { return e.after }

type verdictError struct{ retry bool }

func (e *verdictError) Error() string   { return "verdict" }
func (e *verdictError) Retryable() bool { return e.retry }

var (
	errUnavailable = &httpError{503}
	errNotFound    = &httpError{404}
	errRefused     = &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
)

// failing returns fn failing with errs in turn (the last one repeated), and
// a pointer to the attempts seen.
func failing(errs ...error) (func(context.Context, int) error, *[]int) {
	var seen []int
	return func(_ context.Context, attempt int) error {
		seen = append(seen, attempt)
		return errs[min(attempt, len(errs)-1)]
	}, &seen
}

func TestDo(t *testing.T) {
	s := time.Second
	for _, tc := range []struct {
		name      string
		policy    Policy
		errs      []error
		wantErr   error
		attempts  int
		wantWaits []time.Duration
	}{
		{"success at once", Policy{Idempotent: true}, []error{nil}, nil, 1, nil},
		{"success on the third attempt", Policy{Idempotent: true}, []error{errUnavailable, errUnavailable, nil}, nil, 3,
			[]time.Duration{s / 2, s}},
		{"default 3 retries then the last error", Policy{Idempotent: true}, []error{errUnavailable}, errUnavailable, 4,
			[]time.Duration{s / 2, s, 2 * s}},
		{"Max retries", Policy{Idempotent: true, Max: 5}, []error{errUnavailable}, errUnavailable, 6,
			[]time.Duration{s / 2, s, 2 * s, 4 * s, 8 * s}},
		{"no retries", Policy{Idempotent: true, Max: -1}, []error{errUnavailable}, errUnavailable, 1, nil},
		{"cap", Policy{Idempotent: true, Max: 7, Base: s, Cap: 10 * s}, []error{errUnavailable}, errUnavailable, 8,
			[]time.Duration{s / 2, s, 2 * s, 4 * s, 5 * s, 5 * s, 5 * s}},
		{"multiplier 3", Policy{Idempotent: true, Max: 3, Multiplier: 3, Base: 2 * s}, []error{errUnavailable}, errUnavailable, 4,
			[]time.Duration{s, 3 * s, 9 * s}},
		{"permanent stops at once", Policy{Idempotent: true}, []error{errNotFound}, errNotFound, 1, nil},
		{"permanent after a transient", Policy{Idempotent: true}, []error{errUnavailable, errNotFound}, errNotFound, 2,
			[]time.Duration{s / 2}},
		{"not idempotent: transient not retried", Policy{}, []error{errUnavailable}, errUnavailable, 1, nil},
		{"not idempotent: unsent retried", Policy{}, []error{errRefused, nil}, nil, 2, []time.Duration{s / 2}},
		{"retry-after longer than the backoff", Policy{Idempotent: true}, []error{&retryAfterError{httpError{429}, 7 * s}, nil}, nil, 2,
			[]time.Duration{7 * s}},
		{"retry-after shorter than the backoff", Policy{Idempotent: true}, []error{&retryAfterError{httpError{429}, s / 10}, nil}, nil, 2,
			[]time.Duration{s / 2}},
		{"custom classifier", Policy{Idempotent: true, Classify: func(error) Class { return Permanent }}, []error{errUnavailable}, errUnavailable, 1, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ft := newFakeTime()
			fn, seen := failing(tc.errs...)
			err := Do(context.Background(), ft.policy(tc.policy), fn)
			if err != tc.wantErr {
				t.Errorf("err = %v, want %v", err, tc.wantErr)
			}
			var want []int
			for i := range tc.attempts {
				want = append(want, i)
			}
			if diff := cmp.Diff(want, *seen); diff != "" {
				t.Errorf("attempts (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantWaits, ft.waits); diff != "" {
				t.Errorf("waits (-want +got):\n%s", diff)
			}
		})
	}
}

func TestJitterBounds(t *testing.T) {
	p := Policy{}
	for n := range 8 {
		ceiling := p.Ceiling(n)
		if want := min(time.Second<<n, 30*time.Second); ceiling != want {
			t.Errorf("Ceiling(%d) = %v, want %v", n, ceiling, want)
		}
		for range 1000 {
			if w := p.Backoff(n); w < 0 || w >= ceiling {
				t.Fatalf("Backoff(%d) = %v, want in [0, %v)", n, w, ceiling)
			}
		}
	}
	if c := p.Ceiling(10000); c != 30*time.Second {
		t.Errorf("Ceiling(10000) = %v, want the cap (no overflow)", c)
	}
	lo, hi := Policy{Rand: func() float64 { return 0 }}, Policy{Rand: func() float64 { return 0.999999 }}
	if lo.Backoff(3) != 0 || hi.Backoff(3) < 7999*time.Millisecond {
		t.Errorf("full jitter: Backoff(3) spans [%v, %v], want [0, 8s)", lo.Backoff(3), hi.Backoff(3))
	}
}

func TestDeadlineRespected(t *testing.T) {
	ft := newFakeTime()
	ctx, cancel := context.WithDeadline(context.Background(), ft.now.Add(3500*time.Millisecond))
	defer cancel()
	fn, seen := failing(errUnavailable)
	p := ft.policy(Policy{Idempotent: true, Rand: func() float64 { return 0.999 }})
	if err := Do(ctx, p, fn); err != errUnavailable {
		t.Errorf("err = %v, want the last error", err)
	}
	// Waits of ~1s and ~2s end before 3.5s; the next (~4s) would pass the deadline.
	if len(*seen) != 3 || len(ft.waits) != 2 {
		t.Errorf("%d attempts, waits %v; want 3 attempts, 2 waits", len(*seen), ft.waits)
	}

	// A Retry-After past the deadline stops at once too.
	ft = newFakeTime()
	ctx, cancel = context.WithDeadline(context.Background(), ft.now.Add(5*time.Second))
	defer cancel()
	fn, seen = failing(&retryAfterError{httpError{503}, time.Minute})
	if err := Do(ctx, ft.policy(Policy{Idempotent: true}), fn); err == nil || len(*seen) != 1 || len(ft.waits) != 0 {
		t.Errorf("Retry-After beyond the deadline: err %v, %d attempts, waits %v; want 1 attempt, no wait", err, len(*seen), ft.waits)
	}
}

// Real timers and deadlines, on synctest's clock.
func TestDoRealTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		start := time.Now()
		fn, seen := failing(errUnavailable)
		Do(ctx, Policy{Idempotent: true, Rand: func() float64 { return 0.99 }}, fn)
		// 0.99s + 1.98s; the next wait, 3.96s, would end after the deadline.
		if len(*seen) != 3 || time.Since(start) != 2970*time.Millisecond {
			t.Errorf("%d attempts in %v, want 3 in 2.97s", len(*seen), time.Since(start))
		}
	})
}

func TestAttemptTimeoutRetried(t *testing.T) {
	ft := newFakeTime()
	var seen int
	err := Do(context.Background(), ft.policy(Policy{Idempotent: true, Max: 2}), func(ctx context.Context, attempt int) error {
		seen++
		actx, cancel := context.WithTimeout(ctx, time.Nanosecond)
		defer cancel()
		<-actx.Done()
		return fmt.Errorf("tool weather.forecast: %w", actx.Err())
	})
	if seen != 3 {
		t.Errorf("%d attempts, want 3: an attempt's own timeout is retryable", seen)
	}
	if !errors.Is(err, ErrAttemptTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want ErrAttemptTimeout wrapping DeadlineExceeded", err)
	}
}

func TestCallerContextStops(t *testing.T) {
	t.Run("done before the first attempt", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		fn, seen := failing(errUnavailable)
		if err := Do(ctx, Policy{Idempotent: true}, fn); !errors.Is(err, context.Canceled) || len(*seen) != 0 {
			t.Errorf("err %v after %d attempts, want context.Canceled and none", err, len(*seen))
		}
	})
	t.Run("done during an attempt", func(t *testing.T) {
		ft := newFakeTime()
		ctx, cancel := context.WithCancel(context.Background())
		var seen int
		err := Do(ctx, ft.policy(Policy{Idempotent: true}), func(ctx context.Context, _ int) error {
			seen++
			cancel()
			return ctx.Err()
		})
		if seen != 1 || !errors.Is(err, context.Canceled) || errors.Is(err, ErrAttemptTimeout) {
			t.Errorf("%d attempts, err %v; want 1, context.Canceled", seen, err)
		}
	})
	t.Run("deadline passes during an attempt", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			var seen int
			err := Do(ctx, Policy{Idempotent: true}, func(ctx context.Context, _ int) error {
				seen++
				<-ctx.Done()
				return ctx.Err()
			})
			if seen != 1 || !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrAttemptTimeout) {
				t.Errorf("%d attempts, err %v; want 1, the caller's deadline (not an attempt timeout)", seen, err)
			}
		})
	})
	t.Run("done during the wait", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		fn, seen := failing(errUnavailable)
		p := Policy{Idempotent: true, Sleep: func(ctx context.Context, _ time.Duration) error {
			cancel()
			return ctx.Err()
		}}
		if err := Do(ctx, p, fn); err != errUnavailable || len(*seen) != 1 {
			t.Errorf("err %v after %d attempts, want the last error after 1", err, len(*seen))
		}
	})
}

func TestOnRetry(t *testing.T) {
	ft := newFakeTime()
	type event struct {
		Attempt int
		Err     error
		Wait    time.Duration
	}
	var got []event
	p := ft.policy(Policy{Idempotent: true, Max: 2, OnRetry: func(a int, err error, w time.Duration) {
		got = append(got, event{a, err, w})
	}})
	fn, _ := failing(errUnavailable)
	Do(context.Background(), p, fn)
	want := []event{{0, errUnavailable, 500 * time.Millisecond}, {1, errUnavailable, time.Second}}
	if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b error) bool { return a == b })); diff != "" {
		t.Errorf("OnRetry calls (-want +got):\n%s", diff)
	}
}

type timeoutError struct{}

func (timeoutError) Error() string   { return "i/o timeout" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }

func TestDefaultClassify(t *testing.T) {
	_, dialErr := net.DialTimeout("tcp", "127.0.0.1:1", time.Second) // a closed port: refused
	if dialErr == nil {
		t.Fatal("dialling 127.0.0.1:1 succeeded")
	}
	reset := &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}
	for _, tc := range []struct {
		name string
		err  error
		want Class
	}{
		{"nil", nil, Permanent},
		{"plain", errors.New("boom"), Permanent},
		{"real connection refused", dialErr, Unsent},
		{"wrapped refused", fmt.Errorf("vendor weather: %w", errRefused), Unsent},
		{"dial failure", &net.OpError{Op: "dial", Err: errors.New("no such host")}, Unsent},
		{"connection reset", reset, Transient},
		{"bare ECONNRESET", syscall.ECONNRESET, Transient},
		{"broken pipe", fmt.Errorf("write: %w", syscall.EPIPE), Transient},
		{"net timeout", &net.OpError{Op: "read", Err: timeoutError{}}, Transient},
		{"attempt timeout", fmt.Errorf("%w: %w", ErrAttemptTimeout, context.DeadlineExceeded), Transient},
		{"caller deadline", context.DeadlineExceeded, Permanent},
		{"caller cancel", fmt.Errorf("call: %w", context.Canceled), Permanent},
		{"429", &httpError{429}, Transient},
		{"500", &httpError{500}, Transient},
		{"502", &httpError{502}, Transient},
		{"503", &httpError{503}, Transient},
		{"504", &httpError{504}, Transient},
		{"501 not implemented", &httpError{501}, Permanent},
		{"400", &httpError{400}, Permanent},
		{"401", &httpError{401}, Permanent},
		{"404", &httpError{404}, Permanent},
		{"408", &httpError{408}, Permanent},
		{"Retryable true", &verdictError{true}, Transient},
		{"Retryable false", &verdictError{false}, Permanent},
		{"Retryable wins over status", fmt.Errorf("%w: %w", &verdictError{false}, errUnavailable), Permanent},
	} {
		if got := DefaultClassify(tc.err); got != tc.want {
			t.Errorf("%s: DefaultClassify(%v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}
