package bump

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/registry"
)

// TestNewUpdate holds the lock command's write rule: a run writes what it
// learned when the bytes change, also after failures; a run that failed
// and learned nothing creates no file; the error says what the file keeps.
func TestNewUpdate(t *testing.T) {
	t.Parallel()
	old, next := locks()
	oldData := old.Marshal()
	imgs := images(t, "config")
	n := len(imgs)
	failure := errors.New("2 images failed")
	for _, tc := range []struct {
		name      string
		old, next *lock.Lock
		data      []byte
		runErr    error
		write     bool
		err       string
	}{
		{name: "changed", old: old, next: next, data: oldData, write: true},
		{name: "unchanged", old: old, next: old, data: oldData},
		{name: "new file", old: &lock.Lock{}, next: next, write: true},
		// An error that is no registry.Errors (not known image by
		// image): no advice to run lock again.
		{name: "failed, learned some", old: old, next: next, data: oldData, runErr: failure, write: true,
			err: fmt.Sprintf("2 images failed\nL keeps the 4 entries it has; 2 of %d images missing", n)},
		{name: "failed, kept all", old: old, next: old, data: oldData, runErr: failure,
			err: fmt.Sprintf("2 images failed\nL not changed: it keeps its 4 entries; 2 of %d images missing", n)},
		{name: "failed, nothing learned", old: &lock.Lock{}, next: &lock.Lock{}, runErr: failure,
			err: fmt.Sprintf("2 images failed\nL not written: none of the %d images resolved", n)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := NewUpdate("L", tc.old, tc.next, tc.data, imgs, tc.runErr, 2)
			if u.Write != tc.write || !bytes.Equal(u.Data, tc.next.Marshal()) {
				t.Errorf("write %v (want %v), data %d bytes", u.Write, tc.write, len(u.Data))
			}
			got := ""
			if u.Err != nil {
				got = u.Err.Error()
				if !errors.Is(u.Err, failure) {
					t.Errorf("the error does not wrap the run's")
				}
			}
			if got != tc.err {
				t.Errorf("error\n%s\nwant\n%s", got, tc.err)
			}
			if len(u.Changes) != len(Diff(tc.old, tc.next, imgs)) {
				t.Errorf("changes %v", u.Changes)
			}
		})
	}
}

// TestNewUpdateRerunAdvice checks that the error advises running lock
// again only for failures a later run may pass unchanged: a 503, a 429 or
// a refused connection yes; a 404, a 401 (credentials denied) or a
// password source that cannot be read (a config error) no; a mix says how
// many of each, every count with its plural right.
func TestNewUpdateRerunAdvice(t *testing.T) {
	t.Parallel()
	old, next := locks()
	imgs := images(t, "config")
	n := len(imgs)
	status := func(code int) *registry.ImageError {
		return &registry.ImageError{Image: "i", Answer: "a", Err: &transport.Error{StatusCode: code}}
	}
	refused := &registry.ImageError{Image: "i", Answer: "a", Err: &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}}
	unset := &registry.ImageError{Image: "i", Answer: "a", Err: errors.New("env:REG_PASSWORD is not set")}
	for _, tc := range []struct {
		name     string
		failures registry.Errors
		want     string
	}{
		{"transient", registry.Errors{status(503), refused}, "run `stowage lock` again to resolve them"},
		{"rate limited", registry.Errors{status(429), status(429)}, "run `stowage lock` again to resolve them"},
		{"permanent", registry.Errors{status(404), status(401)}, "running lock again will not help until the changes the failures name are made"},
		{"auth denied", registry.Errors{status(401), status(403)}, "running lock again will not help until the changes the failures name are made"},
		{"config error", registry.Errors{unset, status(503)}, "1 failed on the network or the registry's side and may pass when lock runs again; the other 1 needs the change its failure names first"},
		{"mixed", registry.Errors{status(404), status(502)}, "1 failed on the network or the registry's side and may pass when lock runs again; the other 1 needs the change its failure names first"},
		{"mixed, more", registry.Errors{status(404), status(401), status(502)}, "1 failed on the network or the registry's side and may pass when lock runs again; the other 2 need the changes their failures name first"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := NewUpdate("L", old, next, old.Marshal(), imgs, tc.failures, len(tc.failures))
			want := fmt.Sprintf("L keeps the 4 entries it has; %d of %d images missing: %s", len(tc.failures), n, tc.want)
			if got := u.Err.Error(); !strings.HasSuffix(got, "\n"+want) {
				t.Errorf("error\n%s\nwant it to end with\n%s", got, want)
			}
		})
	}
	for _, tc := range []struct {
		name     string
		old      *lock.Lock
		images   int
		failures registry.Errors
		want     string
	}{
		{"nothing learned, permanent", &lock.Lock{}, n, registry.Errors{status(404)},
			fmt.Sprintf("L not written: none of the %d images resolved; running lock again will not help until the change the failure names is made", n)},
		{"one image, transient", &lock.Lock{}, 1, registry.Errors{status(503)},
			"L not written: the image did not resolve; run `stowage lock` again once it does"},
		{"one entry kept, auth denied", oneEntry(old), n, registry.Errors{status(401)},
			fmt.Sprintf("L not changed: it keeps its 1 entry; 1 of %d images missing: running lock again will not help until the change the failure names is made", n)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := NewUpdate("L", tc.old, tc.old, tc.old.Marshal(), imgs[:tc.images], tc.failures, len(tc.failures))
			if got := u.Err.Error(); !strings.HasSuffix(got, "\n"+tc.want) {
				t.Errorf("error\n%s\nwant it to end with\n%s", got, tc.want)
			}
		})
	}
}

// oneEntry is a lock holding l's first entry alone.
func oneEntry(l *lock.Lock) *lock.Lock {
	one := &lock.Lock{}
	one.Put(l.Entries[0])
	return one
}
