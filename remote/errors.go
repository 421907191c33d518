package remote

import "errors"

// Errors returned by New. Every other failure is reported through Stats and
// one warning line, never to the caller: the tier fails open.
var (
	// ErrURL: the URL is not redis://[user:pass@]host:port/db or
	// rediss://... (TLS), or its database number is not an integer.
	ErrURL = errors.New("remote: bad URL")
	// ErrOptions: an option is out of range.
	ErrOptions = errors.New("remote: bad option")
)
