// Package fluxartifact builds the OCI artifact that Flux's OCIRepository
// pulls from a rendered profile: the layout `flux push artifact` writes
// (github.com/fluxcd/pkg/oci v0.70.0, push.go and constants.go): an OCI
// image manifest whose config has Flux's config media type and whose one
// layer is a gzip-compressed tar of the files, with Flux's content media
// type, and the OpenContainers annotations created, source and revision on
// the manifest.
//
// Unlike flux push artifact, the build is deterministic: the tar holds the
// files sorted by name, each a regular file of mode 0644 owned by 0:0 with
// the Unix epoch as its times, the gzip header carries no name and no
// time, and created is given by the caller, so the same files and
// metadata give the same digest on every machine.
package fluxartifact

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/stowage/stowage/internal/render"
)

// Flux's media types and annotation keys (fluxcd/pkg/oci constants.go).
const (
	// ConfigMediaType is the media type of the artifact's config.
	ConfigMediaType types.MediaType = "application/vnd.cncf.flux.config.v1+json"
	// ContentMediaType is the media type of its one layer, the tar+gzip
	// of the files.
	ContentMediaType types.MediaType = "application/vnd.cncf.flux.content.v1.tar+gzip"
	// SourceAnnotation names the upstream source (a Git URL).
	SourceAnnotation = "org.opencontainers.image.source"
	// RevisionAnnotation names the source's revision (Flux writes
	// BRANCH@sha1:COMMIT).
	RevisionAnnotation = "org.opencontainers.image.revision"
	// CreatedAnnotation is when the artifact was built, RFC 3339.
	CreatedAnnotation = "org.opencontainers.image.created"
)

// Metadata is what the manifest's annotations say. Created must be set
// for a reproducible digest (the caller decides: SOURCE_DATE_EPOCH, a
// commit time); Source and Revision may be empty, and are then omitted.
type Metadata struct {
	Created  time.Time
	Source   string
	Revision string
}

// MaxAnnotationBytes bounds Source and Revision (4 KiB each).
const MaxAnnotationBytes = 4 << 10

// Validate refuses a Source or Revision that is not printable text (a
// control character, an invalid UTF-8 byte, a format character such as a
// bidirectional override: Flux and registries show annotations on a
// terminal), longer than MaxAnnotationBytes, or a Source URL carrying
// user:password@ (a CI job's clone URL with its token: anyone who pulls
// the artifact would read it). Errors name the annotation and the
// offending byte offset, never the value.
func (m Metadata) Validate() error {
	for _, a := range []struct{ key, v string }{{SourceAnnotation, m.Source}, {RevisionAnnotation, m.Revision}} {
		if len(a.v) > MaxAnnotationBytes {
			return fmt.Errorf("%s: %d bytes, more than %d, the limit", a.key, len(a.v), MaxAnnotationBytes)
		}
		for i, r := range a.v {
			if r == utf8.RuneError || !unicode.IsPrint(r) {
				return fmt.Errorf("%s: the character at byte %d (%U) is not printable; give printable text", a.key, i, r)
			}
		}
	}
	if _, rest, ok := strings.Cut(m.Source, "://"); ok {
		authority, _, _ := strings.Cut(rest, "/")
		if strings.Contains(authority, "@") {
			return fmt.Errorf("%s: the URL carries user information (user:password@); give the repository's URL without it", SourceAnnotation)
		}
	}
	return nil
}

// LeaveOutSecrets splits objs into what an artifact holds by default and
// the Secrets it leaves out: anyone who may pull the artifact could read
// a Secret's data (registry passwords), so Flux gets pull Secrets from
// elsewhere (SOPS-encrypted in Git, an external secret store). The order
// of each part is objs'.
func LeaveOutSecrets(objs []render.Object) (kept, secrets []render.Object) {
	for _, o := range objs {
		if o.Kind == "Secret" {
			secrets = append(secrets, o)
		} else {
			kept = append(kept, o)
		}
	}
	return kept, secrets
}

// Annotations returns the manifest annotations of m: created always (UTC,
// RFC 3339, seconds), source and revision when set.
func (m Metadata) Annotations() map[string]string {
	a := map[string]string{CreatedAnnotation: m.Created.UTC().Format(time.RFC3339)}
	if m.Source != "" {
		a[SourceAnnotation] = m.Source
	}
	if m.Revision != "" {
		a[RevisionAnnotation] = m.Revision
	}
	return a
}

// Tar returns the gzip-compressed tar of files (name -> content), sorted
// by name, every entry a regular file of mode 0644, owner 0:0, the Unix
// epoch as its time. Names must be relative slash paths without "." or
// ".." elements (render.Files gives flat names); a directory entry is
// written before the first file beneath it.
func Tar(files map[string][]byte) ([]byte, error) {
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range files {
			if !yield(n) {
				return
			}
		}
	})
	var buf bytes.Buffer
	gz, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	tw := tar.NewWriter(gz)
	epoch := time.Unix(0, 0)
	dirs := map[string]bool{}
	for _, n := range names {
		if n == "" || path.IsAbs(n) || path.Clean(n) != n || strings.HasPrefix(n, "../") || n == ".." {
			return nil, fmt.Errorf("artifact file name %q: want a relative slash path", n)
		}
		var missing []string // n's directories not written yet, deepest first
		for d := path.Dir(n); d != "." && !dirs[d]; d = path.Dir(d) {
			missing = append(missing, d)
		}
		for i := len(missing) - 1; i >= 0; i-- {
			dirs[missing[i]] = true
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: missing[i] + "/", Mode: 0o755, ModTime: epoch, Format: tar.FormatPAX}); err != nil {
				return nil, err
			}
		}
		b := files[n]
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: n, Mode: 0o644, Size: int64(len(b)), ModTime: epoch, Format: tar.FormatPAX}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(b); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := gz.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Image returns the artifact of files with m's annotations: an OCI image
// manifest (types.OCIManifestSchema1) with config media type
// ConfigMediaType and one layer of ContentMediaType holding Tar(files),
// as Flux's Push builds it. Errors: a file name Tar refuses.
func Image(files map[string][]byte, m Metadata) (v1.Image, error) {
	tgz, err := Tar(files)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(tgz)), nil
	}, tarball.WithMediaType(ContentMediaType))
	if err != nil {
		return nil, err
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, ConfigMediaType)
	img = mutate.Annotations(img, m.Annotations()).(v1.Image)
	return mutate.Append(img, mutate.Addendum{Layer: layer})
}
