// Package results is the file that bench/runner writes and bench/plot reads
// (results.json): every repeat's sample of every metric for every
// implementation, with the run's settings, and the one summary both tools
// show, a median with the range of the repeats.
//
// Metrics are keyed "name/size" ("hit1_ns/100000"), or "name/processes" for
// the writer rounds ("wtput/4"), or a bare name ("demo_cold_ms"); samples
// are kept per implementation id ("a".."e").
package results
