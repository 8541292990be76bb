package main

/*
#cgo CFLAGS: -I${SRCDIR}/../include -std=gnu11 -Wall
*/
import "C"

// main is required by -buildmode=c-shared and never runs.
func main() {}
