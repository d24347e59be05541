package retry

import (
	"context"
	"errors"
	"net"
	"syscall"
	"time"
)

// Retryable is implemented by errors that know whether a retry may help.
// It takes precedence over every other rule of [DefaultClassify].
type Retryable interface {
	Retryable() bool
}

// RetryAfter is implemented by errors that carry a server's Retry-After
// (or a local limiter's wait). [Do] waits at least that long, when the
// error is retried at all.
type RetryAfter interface {
	RetryAfter() time.Duration
}

// HTTPStatus is implemented by errors that carry an upstream HTTP status.
type HTTPStatus interface {
	HTTPStatus() int
}

// DefaultClassify says which errors are worth a retry. In order, the first
// rule that applies:
//
//   - an error implementing [Retryable] (anywhere in its chain): [Transient]
//     if it says so, else [Permanent];
//   - [ErrAttemptTimeout] (an attempt's own deadline passed): [Transient];
//   - [context.Canceled] or [context.DeadlineExceeded] (the caller's): [Permanent];
//   - [HTTPStatus]: 429 and 5xx except 501 Not Implemented: [Transient];
//     other statuses: [Permanent];
//   - connection refused, or any failure to dial: [Unsent];
//   - connection reset or aborted, a network timeout, a broken pipe: [Transient];
//   - anything else: [Permanent].
func DefaultClassify(err error) Class {
	if err == nil {
		return Permanent
	}
	var r Retryable
	if errors.As(err, &r) {
		if r.Retryable() {
			return Transient
		}
		return Permanent
	}
	switch {
	case errors.Is(err, ErrAttemptTimeout):
		return Transient
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return Permanent
	}
	var s HTTPStatus
	if errors.As(err, &s) {
		switch code := s.HTTPStatus(); {
		case code == 429: // Too Many Requests
			return Transient
		case code >= 500 && code != 501: // 501 Not Implemented will not change
			return Transient
		}
		return Permanent
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		return Unsent
	}
	if op, ok := errors.AsType[*net.OpError](err); ok && op.Op == "dial" {
		return Unsent
	}
	switch {
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.ECONNABORTED), errors.Is(err, syscall.EPIPE):
		return Transient
	}
	if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
		return Transient
	}
	return Permanent
}
