package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// writeFileAtomic replaces path with data so that a reader (or a crash)
// sees the old file or the new one, never a part, and leaves no temporary
// file behind:
//
//   - the data is written to an unnamed file in the target's directory
//     (O_TMPFILE) and flushed to disk (fsync) before it gets a name; only
//     then is it linked under a temporary name and renamed over path, and
//     the directory is flushed too. A kill -9 before the link leaves
//     nothing; on file systems without O_TMPFILE a hidden temporary file
//     is used and removed on every error.
//   - an existing file keeps its permission bits (a 0600 report stays
//     0600); a new one is 0644.
//   - a path that exists and is not a regular file (/dev/stdout, a named
//     pipe) is written in place: renaming over a device would replace it.
func writeFileAtomic(path string, data []byte) error {
	return writeFileAtomicHook(path, data, nil)
}

// writeFileAtomicHook is writeFileAtomic with a hook called once the data
// is written and synced but before it has a name (tests look then).
func writeFileAtomicHook(path string, data []byte, beforeLink func()) error {
	mode := fs.FileMode(0o644)
	if st, err := os.Stat(path); err == nil {
		if !st.Mode().IsRegular() {
			if st.IsDir() {
				return fmt.Errorf("--out %s is a directory", path)
			}
			f, err := os.OpenFile(path, os.O_WRONLY, 0)
			if err != nil {
				return err
			}
			if _, err := f.Write(data); err != nil {
				f.Close()
				return err
			}
			return f.Close()
		}
		mode = st.Mode().Perm()
	}
	dir := filepath.Dir(path)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		// said plainly, not as the temporary file's name the write fails on
		return fmt.Errorf("%s cannot be written: its directory %s does not exist; create it, or give another path", path, dir)
	}
	if done, err := writeViaTmpfile(path, dir, data, mode, beforeLink); done {
		return err
	}
	// no O_TMPFILE here: a named temporary file
	return writeViaTemp(path, dir, data, mode, beforeLink)
}

// writeSync writes data, sets mode exactly (umask aside) and flushes it.
func writeSync(f *os.File, data []byte, mode fs.FileMode) error {
	if _, err := f.Write(data); err != nil {
		return err
	}
	if err := f.Chmod(mode); err != nil {
		return err
	}
	return f.Sync()
}

func writeViaTemp(path, dir string, data []byte, mode fs.FileMode, beforeLink func()) error {
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	if err := writeSync(f, data, mode); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return err
	}
	if beforeLink != nil {
		beforeLink()
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return syncDir(dir)
}

// syncDir flushes a directory, so a rename in it survives a power loss.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) {
		return err
	}
	return nil
}
