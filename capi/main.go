package main

// main is never run: -buildmode=c-shared needs package main, and the
// library's entry points are the exported functions (see doc.go).
func main() {}
