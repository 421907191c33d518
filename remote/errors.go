package remote

import (
	"errors"

	"github.com/convcache/convcache/internal/config"
)

// Errors returned by New. Every other failure is reported through Stats and
// one warning line, never to the caller: the tier fails open.
var (
	// ErrURL: the URL is not redis://[user:pass@]host:port/db or
	// rediss://... (TLS), or its database number is not an integer.
	ErrURL = errors.New("remote: bad URL")
	// ErrOptions: an option is out of range.
	ErrOptions = errors.New("remote: bad option")
	// ErrMACKey: the record MAC key is out of bounds. It is
	// config.ErrMACKey, which a key file that cannot be used gives too.
	ErrMACKey = config.ErrMACKey
)

// errReply fails a connection whose server sent a reply out of bounds (see
// bound.go). It reaches the caller as a failed call: a miss, counted in
// Errors, the server marked down.
var errReply = errors.New("remote: reply out of bounds")
