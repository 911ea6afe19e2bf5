//go:build linux

package cluster

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// dataDirLink is kubelet's name for the symlink to the current copy of a volume's files.
const dataDirLink = "..data"

// writeVolume gives dir the files as kubelet's atomic writer does for Secret, ConfigMap and
// projected volumes: each update goes to a new timestamped directory, the ..data symlink is
// swapped to it with one rename, and each visible file is a symlink through ..data. A reader
// sees the old set or the new set, never a mix, and file watchers see the swap as events on
// the paths they watch.
func writeVolume(dir string, files map[string][]byte, mode os.FileMode) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	previous, _ := os.Readlink(filepath.Join(dir, dataDirLink))

	version := ".." + time.Now().UTC().Format("2006_01_02_15_04_05.000000000")
	versionDir := filepath.Join(dir, version)
	if err := os.Mkdir(versionDir, 0o755); err != nil {
		return err
	}
	for name, data := range files {
		if strings.Contains(name, "/") || strings.HasPrefix(name, "..") {
			return fmt.Errorf("volume file name %q is not supported", name)
		}
		if err := os.WriteFile(filepath.Join(versionDir, name), data, mode); err != nil {
			return err
		}
	}

	tmpLink := filepath.Join(dir, dataDirLink+"_tmp")
	_ = os.Remove(tmpLink)
	if err := os.Symlink(version, tmpLink); err != nil {
		return err
	}
	if err := os.Rename(tmpLink, filepath.Join(dir, dataDirLink)); err != nil {
		return fmt.Errorf("swapping %s: %w", dataDirLink, err)
	}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		link := filepath.Join(dir, name)
		if _, err := os.Lstat(link); err == nil {
			continue
		}
		if err := os.Symlink(filepath.Join(dataDirLink, name), link); err != nil {
			return err
		}
	}
	if previous != "" && previous != version {
		return os.RemoveAll(filepath.Join(dir, previous))
	}
	return nil
}
