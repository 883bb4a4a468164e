//go:build linux

package main

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// writeViaTmpfile writes data to an unnamed file in dir (O_TMPFILE),
// syncs it, and only then links it under a temporary name and renames it
// over path. done is false when the file system has no O_TMPFILE (or /proc
// is not mounted) and nothing was written.
func writeViaTmpfile(path, dir string, data []byte, mode fs.FileMode, beforeLink func()) (done bool, err error) {
	f, err := os.OpenFile(dir, os.O_WRONLY|unix.O_TMPFILE|unix.O_CLOEXEC, mode)
	if err != nil {
		return false, nil
	}
	defer f.Close()
	if err := writeSync(f, data, mode); err != nil {
		return true, err
	}
	if beforeLink != nil {
		beforeLink()
	}
	// give it a name (a fresh one: linkat cannot replace), then the real one
	for i := 0; ; i++ {
		tmp := filepath.Join(dir, "."+filepath.Base(path)+".tmp"+strconv.Itoa(os.Getpid())+"-"+strconv.Itoa(i))
		err := unix.Linkat(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(int(f.Fd())), unix.AT_FDCWD, tmp, unix.AT_SYMLINK_FOLLOW)
		if errors.Is(err, unix.EEXIST) && i < 100 {
			continue
		}
		if err != nil {
			return false, nil
		}
		if err := os.Rename(tmp, path); err != nil {
			os.Remove(tmp)
			return true, err
		}
		return true, syncDir(dir)
	}
}
