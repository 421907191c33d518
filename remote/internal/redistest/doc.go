// Package redistest runs a real redis-server on a loopback port, and a proxy
// that delays its replies, for the remote tier's tests and its cluster
// benchmark. The tier's behaviour is tested against a real server, never a
// mock; Fake (fake.go) serves only the replies no real server sends, for
// the tests of a hostile server.
package redistest
