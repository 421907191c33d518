// Package config resolves convcache's configuration: Resolve turns what a
// caller asks for (Request: the fields of the C API's convcache_options)
// and the environment (every CONVCACHE_* variable) into the settings a
// handle opens with (Config): the cache file, the engine's options and the
// remote tier's settings. The C library (capi) and the command-line tool
// both call it, so that they agree on every default and every precedence:
//
//   - a caller's non-zero field wins over its variable, which wins over the
//     default;
//   - CONVCACHE_DISABLE=1 wins over everything, a caller's mode included:
//     it is the same as CONVCACHE_MODE=off;
//   - a value that does not parse prints one warning line (once per process
//     per variable and value) and the default is used: a typo never stops a
//     training job, and never silently takes effect as something else.
//
// Resolve reads the environment only through the lookup it is given. The
// callers give secenv.Lookup, which in a privileged process (set-user-ID,
// set-group-ID, file capabilities: AT_SECURE) reads every variable as
// unset, so that the defaults apply.
//
// The package produces plain values, and does not import the network
// client (package remote, go-redis): the callers build the remote tier from
// Config.Remote. The tier's bounds and its record key's file rules are
// here, where both this package and remote read them.
//
// # Caveats
//
//   - With the mode off the default path is not resolved (a privileged
//     process needs none) and the record key file is not read.
//   - The log file (CONVCACHE_LOG) is opened once per process and path, and
//     stays open for the life of the process.
package config
