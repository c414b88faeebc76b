package mirror

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/stowage/stowage/internal/sigverify"
)

// maxServedBlob bounds a blob the bundle's read-only view serves for a
// verification: 64 MiB (a signature, a Sigstore bundle or an attestation
// is some KiB; sigverify reads at most its own bound of them).
const maxServedBlob = 64 << 20

// VerifyBundle checks, before anything is pushed, the signatures of the
// bundle's images (those pols names) under their policies, reading the
// signatures from the bundle itself: its files are served read-only, by
// digest and by the attachments' tags, with an OCI referrers listing per
// subject, on a listener of 127.0.0.1 that lives for this call, and
// sigverify reads them as it reads a registry's. Nothing leaves the
// machine and nothing is written. It returns one Signature per image and
// policy, in the order of images; an image whose required policy does not
// verify is among the Errors returned (named, with why).
func VerifyBundle(ctx context.Context, path string, images []Image, pols map[string][]*sigverify.Policy) ([]Signature, Errors, error) {
	root, err := os.OpenRoot(path)
	if err != nil {
		return nil, nil, fmt.Errorf("oci:%s: not an OCI image layout: %w", path, err)
	}
	defer root.Close()
	v := &bundleView{root: root, path: path, tags: map[string]map[string]v1.Hash{}, referrers: map[string][]v1.Hash{}}
	for _, img := range images {
		repo := img.Source.RepositoryStr()
		if a := img.Attachment; a != nil {
			if img.Tag != "" {
				if v.tags[repo] == nil {
					v.tags[repo] = map[string]v1.Hash{}
				}
				v.tags[repo][img.Tag] = img.Digest
			}
			if a.Kind == KindReferrer {
				k := repo + "@" + a.Subject.String()
				v.referrers[k] = append(v.referrers[k], img.Digest)
			}
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, err
	}
	srv := &http.Server{Handler: v, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	defer srv.Close()
	host := ln.Addr().String()
	puller, err := remote.NewPuller(remote.WithContext(ctx))
	if err != nil {
		return nil, nil, err
	}
	var sigs []Signature
	var errs Errors
	for _, img := range images {
		if img.Attachment != nil {
			continue
		}
		for _, pol := range pols[img.Name] {
			s := Signature{Name: img.Name, Written: img.written(), Reference: "oci:" + path + " " + img.Name + "@" + img.Digest.String(), Digest: img.Digest, Policy: pol.At, Required: pol.Required}
			repo, err := name.NewRepository(host+"/"+img.Source.RepositoryStr(), name.Insecure)
			if err == nil {
				s.Signer, err = pol.Check(ctx, repo, puller, img.Digest)
			}
			if err != nil {
				// The loopback address means nothing to the reader.
				err = fmt.Errorf("%s", strings.ReplaceAll(err.Error(), host+"/", "oci:"+path+" "))
			}
			s.Err = err
			sigs = append(sigs, s)
			if err != nil && pol.Required {
				errs = append(errs, (&failure{where: "oci:" + path, op: "verify signatures in the bundle under " + pol.At, err: err}).imageError(img, nil))
			}
		}
	}
	errs.Sorted()
	return sigs, errs, nil
}

// bundleView serves a bundle read-only as the part of the OCI
// distribution API sigverify reads: manifests by digest or tag, blobs,
// referrers.
type bundleView struct {
	root *os.Root
	path string
	// tags are the attachments' tags, by repository path; referrers the
	// referrers of each subject, by "repository@digest".
	tags      map[string]map[string]v1.Hash
	referrers map[string][]v1.Hash
}

func (v *bundleView) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		http.Error(w, "read-only", http.StatusMethodNotAllowed)
		return
	}
	p := strings.TrimPrefix(r.URL.Path, "/v2/")
	if p == "" || r.URL.Path == "/v2" {
		w.WriteHeader(http.StatusOK)
		return
	}
	for _, kind := range []string{"/manifests/", "/blobs/", "/referrers/"} {
		i := strings.LastIndex(p, kind)
		if i < 0 {
			continue
		}
		repo, ref := p[:i], p[i+len(kind):]
		switch kind {
		case "/manifests/":
			v.manifest(w, r, repo, ref)
		case "/blobs/":
			h, err := v1.NewHash(ref)
			if err != nil {
				http.NotFound(w, r)
				return
			}
			v.blob(w, r, h, "application/octet-stream", maxServedBlob)
		default:
			v.listReferrers(w, r, repo, ref)
		}
		return
	}
	http.NotFound(w, r)
}

func (v *bundleView) manifest(w http.ResponseWriter, r *http.Request, repo, ref string) {
	h, err := v1.NewHash(ref)
	if err != nil {
		var ok bool
		if h, ok = v.tags[repo][ref]; !ok {
			http.NotFound(w, r)
			return
		}
	}
	raw, err := v.read(h, maxManifestBytes)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	v.send(w, r, h, string(sniffMediaType(raw)), raw)
}

func (v *bundleView) blob(w http.ResponseWriter, r *http.Request, h v1.Hash, mt string, max int64) {
	raw, err := v.read(h, max)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	v.send(w, r, h, mt, raw)
}

// listReferrers answers the referrers API with the bundle's referrers of
// subject in repo.
func (v *bundleView) listReferrers(w http.ResponseWriter, r *http.Request, repo, subject string) {
	idx := v1.IndexManifest{SchemaVersion: 2, MediaType: types.OCIImageIndex, Manifests: []v1.Descriptor{}}
	for _, h := range v.referrers[repo+"@"+subject] {
		raw, err := v.read(h, maxManifestBytes)
		if err != nil {
			continue
		}
		var m v1.Manifest
		if json.Unmarshal(raw, &m) != nil {
			continue
		}
		at := m.ArtifactType
		if at == "" {
			at = string(m.Config.MediaType)
		}
		idx.Manifests = append(idx.Manifests, v1.Descriptor{MediaType: sniffMediaType(raw), Digest: h, Size: int64(len(raw)), ArtifactType: at, Annotations: m.Annotations})
	}
	raw, _ := json.Marshal(idx)
	w.Header().Set("Content-Type", string(types.OCIImageIndex))
	w.Write(raw)
}

// read reads blob h, at most max bytes, checked against h.
func (v *bundleView) read(h v1.Hash, max int64) ([]byte, error) {
	f, err := openBlob(v.root, v.path, h)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	raw, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(raw)) > max {
		return nil, fmt.Errorf("blob %s is larger than %d bytes", h, max)
	}
	if got, _, _ := v1.SHA256(bytes.NewReader(raw)); got != h {
		return nil, errDamaged
	}
	return raw, nil
}

func (v *bundleView) send(w http.ResponseWriter, r *http.Request, h v1.Hash, mt string, raw []byte) {
	w.Header().Set("Content-Type", mt)
	w.Header().Set("Docker-Content-Digest", h.String())
	w.Header().Set("Content-Length", fmt.Sprint(len(raw)))
	if r.Method == http.MethodHead {
		return
	}
	w.Write(raw)
}
