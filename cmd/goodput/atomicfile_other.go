//go:build !linux

package main

import "io/fs"

// writeViaTmpfile: O_TMPFILE is Linux's; elsewhere a named temporary file
// is used.
func writeViaTmpfile(path, dir string, data []byte, mode fs.FileMode, beforeLink func()) (done bool, err error) {
	return false, nil
}
