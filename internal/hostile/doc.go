// Package hostile writes cache files an attacker could plant: every frame
// carries a correct CRC-32C, so nothing is rejected as plain damage, and
// every count, length and size in them is chosen to make a careless reader
// allocate, decode or scan far more than the file's size.
//
// It is a black-box adversary: it encodes the file format documented in
// package cache (cache/doc.go) itself, with hash/crc32, xxhash and, for
// compression bombs, zstd frames built block by block, and never calls the
// cache package's encoders. A change to those encoders cannot hide a class
// here.
//
// Classes lists every class; Class.Build writes one at about a given size.
// The command tests/hostile/gen writes them all into a directory for the
// C and shell side, and tests/hostile/harness runs each through the
// library, the command-line tool and the LD_PRELOAD interposer under a
// memory and a time limit (make hostile-test). The cache package's fuzz
// targets take small builds of every class as seeds.
package hostile
