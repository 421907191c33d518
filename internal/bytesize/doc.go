// Package bytesize reads and writes byte counts as people write them:
// Parse reads "512M" or "2GiB" (a CONVCACHE_MAX_BYTES value, a --max-bytes
// flag), Format writes "1.5 KiB" (the command-line tool's reports, cuDNN
// workspace sizes in entry descriptions). Both use powers of 1024. It has
// no dependencies beyond the standard library, so the cuDNN codecs and the
// C library can use it.
package bytesize
