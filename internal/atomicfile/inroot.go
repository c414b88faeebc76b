package atomicfile

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// inRootOpened, when set (tests), runs once WriteFileIn holds rel's
// directory open, before it writes.
var inRootOpened func()

// WriteFileIn is WriteFileContext for rel, a local path (filepath.IsLocal)
// inside the directory dir, with every step confined to dir: the
// directory of rel is opened through an os.Root on dir, so that a ".."
// or a symbolic link leading out of dir is refused, and the temporary
// file, its rename over rel and the directory's sync all go through that
// open directory. A link swapped in after the open cannot redirect the
// write; a symbolic link at rel itself is replaced, never followed.
// Errors name filepath.Join(dir, rel); on any error the file keeps its
// old content (or stays absent) and no temporary file remains.
func WriteFileIn(ctx context.Context, dir, rel string, data []byte, perm fs.FileMode) (err error) {
	shown := filepath.Join(dir, rel)
	defer func() {
		if err != nil {
			err = fmt.Errorf("write %s: %w", shown, err)
		}
	}()
	if err := ctx.Err(); err != nil {
		return err
	}
	if !filepath.IsLocal(rel) {
		return fmt.Errorf("not a path inside %s", dir)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	sub, err := root.OpenRoot(filepath.Dir(rel))
	if err != nil {
		return err
	}
	defer sub.Close()
	if inRootOpened != nil {
		inRootOpened()
	}
	base := filepath.Base(rel)
	prefix := "." + base + ".tmp-"
	if d, err := sub.Open("."); err == nil {
		names, _ := d.Readdirnames(-1)
		d.Close()
		for _, n := range names {
			if strings.HasPrefix(n, prefix) {
				sub.RemoveAll(n)
			}
		}
	}
	var rnd [8]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return err
	}
	tmp := prefix + hex.EncodeToString(rnd[:])
	f, err := sub.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			sub.Remove(tmp)
		}
	}()
	if _, err := f.Write(data); err != nil {
		return err
	}
	if err := f.Chmod(perm); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := sub.Rename(tmp, base); err != nil {
		return err
	}
	if d, err := sub.Open("."); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}
