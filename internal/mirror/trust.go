package mirror

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"reflect"
	"slices"
	"sort"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/internal/trustfile"
)

// The trust material a bundle carries: one OCI manifest (an artifact of
// type TrustArtifactType) listed in index.json with AnnotationTrust, whose
// config is the Trust document (JSON) and whose layers are the files its
// policies read — cosign public keys and sigstore trusted_root.json files
// — each by content digest.
const (
	// AnnotationTrust marks the descriptor of index.json that is the
	// trust material, not an image; its value is TrustVersion.
	AnnotationTrust = "dev.stowage.trust"
	// TrustVersion is the value of AnnotationTrust this package writes.
	TrustVersion = "1"
	// AnnotationTrustField is, on each layer, the policy field that names
	// the file ("verify.keys[0]", "images.app.verify.trustedRoot").
	AnnotationTrustField = "dev.stowage.trust.field"
	// AnnotationTitle is, on each layer, the file's path as the config
	// wrote it (the OCI annotation of a file name).
	AnnotationTitle = "org.opencontainers.image.title"
	// TrustArtifactType is the artifact type of the trust manifest.
	TrustArtifactType = "application/vnd.dev.stowage.trust.v1"
	// TrustConfigType is the media type of its config, the Trust
	// document.
	TrustConfigType types.MediaType = "application/vnd.dev.stowage.trust.config.v1+json"
	// TrustKeyType is a cosign public key PEM file's media type.
	TrustKeyType types.MediaType = "application/vnd.dev.stowage.trust.key.v1+pem"
	// TrustRootType is a sigstore trusted_root.json's media type.
	TrustRootType types.MediaType = "application/vnd.dev.stowage.trust.trustedroot.v1+json"
)

// Bounds on the trust material read from a bundle.
const (
	// maxTrustDocument bounds the Trust document: 16 MiB, as index.json.
	maxTrustDocument = 16 << 20
	// maxTrustFiles bounds the files (layers) and the policies: 1,000.
	maxTrustFiles = 1000
)

// maxKeyFile and maxRootFile bound a key and a trusted root read from a
// bundle as lock and render bound them (internal/trustfile).
var (
	maxKeyFile  = trustfile.Key.Max
	maxRootFile = trustfile.TrustedRoot.Max
)

// Trust is what a bundle records of the verify policies its images were
// locked under, so that the push at the site verifies the site's copy with
// the same trust, with no config there: the distinct policies, and which
// apply to each image.
type Trust struct {
	// Policies are the distinct policies, sorted by field and content.
	Policies []TrustPolicy `json:"policies"`
	// Images maps an image's lock key (Image.Name) to the indexes in
	// Policies of the policies that apply to it, ascending.
	Images map[string][]int `json:"images"`
}

// TrustPolicy is one verify policy as the config wrote it.
type TrustPolicy struct {
	// At is the field it is written at ("verify", "images.NAME.verify").
	At string `json:"at"`
	// Verify is the policy, its keys and trusted root as the paths the
	// config names.
	Verify v1alpha1.Verify `json:"verify"`
	// Files are the digests of those files' contents, by path.
	Files map[string]string `json:"files"`
	// Content are the files' contents, by path: given to WithTrust,
	// filled (each checked against its digest) by BundleTrust.
	Content map[string][]byte `json:"-"`
}

// Add records that policy p applies to the image named image (its lock
// key): p is added once however many images it applies to. p's Files are
// computed from its Content.
func (t *Trust) Add(image string, p TrustPolicy) {
	if t.Images == nil {
		t.Images = map[string][]int{}
	}
	p.Files = map[string]string{}
	for path, data := range p.Content {
		p.Files[path] = digestOf(data).String()
	}
	i := slices.IndexFunc(t.Policies, func(q TrustPolicy) bool { return q.At == p.At && samePolicy(q, p) })
	if i < 0 {
		i = len(t.Policies)
		t.Policies = append(t.Policies, p)
	}
	if !slices.Contains(t.Images[image], i) {
		t.Images[image] = append(t.Images[image], i)
	}
}

// For returns the policies that apply to image (its lock key).
func (t *Trust) For(image string) []TrustPolicy {
	if t == nil {
		return nil
	}
	var out []TrustPolicy
	for _, i := range t.Images[image] {
		out = append(out, t.Policies[i])
	}
	return out
}

func samePolicy(a, b TrustPolicy) bool {
	return reflect.DeepEqual(a.Verify, b.Verify) && maps2Equal(a.Files, b.Files)
}

func maps2Equal(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func digestOf(data []byte) v1.Hash {
	sum := sha256.Sum256(data)
	return v1.Hash{Algorithm: "sha256", Hex: hex.EncodeToString(sum[:])}
}

// merged is held's policies for the images keep says to keep, with t's:
// a trust rebuilt so that its order does not depend on which run added
// what.
func (t *Trust) merged(held *Trust, keep func(image string) bool) *Trust {
	out := &Trust{}
	add := func(from *Trust, image string) {
		for _, p := range from.For(image) {
			out.Add(image, p)
		}
	}
	if held != nil {
		for _, image := range slices.Sorted(maps.Keys(held.Images)) {
			if keep(image) {
				add(held, image)
			}
		}
	}
	if t != nil {
		for _, image := range slices.Sorted(maps.Keys(t.Images)) {
			add(t, image)
		}
	}
	if len(out.Images) == 0 {
		return nil
	}
	out.normalize()
	return out
}

// normalize sorts the policies by field and content and renumbers the
// images' indexes, so that the same policies give the same bytes.
func (t *Trust) normalize() {
	key := func(p TrustPolicy) string {
		b, _ := json.Marshal(p)
		return p.At + "\x00" + string(b)
	}
	order := make([]int, len(t.Policies))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return key(t.Policies[order[a]]) < key(t.Policies[order[b]]) })
	renumber := make([]int, len(order))
	sorted := make([]TrustPolicy, len(order))
	for to, from := range order {
		renumber[from] = to
		sorted[to] = t.Policies[from]
	}
	t.Policies = sorted
	for image, idx := range t.Images {
		for i := range idx {
			idx[i] = renumber[idx[i]]
		}
		sort.Ints(idx)
		t.Images[image] = idx
	}
}

// trustBlob is one blob of the trust material: the manifest, the
// document, or a file.
type trustBlob struct {
	d    v1.Descriptor
	data []byte
}

// encode gives t's manifest and the blobs it references (the document and
// each distinct file, sorted by digest), deterministically.
func (t *Trust) encode() (manifest trustBlob, blobs []trustBlob, err error) {
	doc, err := json.Marshal(t)
	if err != nil {
		return trustBlob{}, nil, err
	}
	config := trustBlob{d: v1.Descriptor{MediaType: TrustConfigType, Digest: digestOf(doc), Size: int64(len(doc))}, data: doc}
	files := map[string]trustBlob{}
	for _, p := range t.Policies {
		for path, data := range p.Content {
			h := digestOf(data)
			if _, ok := files[h.String()]; ok {
				continue
			}
			mt, field := TrustKeyType, p.At+".keys["+fmt.Sprint(slices.Index(p.Verify.Keys, path))+"]"
			if path == p.Verify.TrustedRoot {
				mt, field = TrustRootType, p.At+".trustedRoot"
			}
			files[h.String()] = trustBlob{d: v1.Descriptor{MediaType: mt, Digest: h, Size: int64(len(data)),
				Annotations: map[string]string{AnnotationTitle: path, AnnotationTrustField: field}}, data: data}
		}
	}
	m := v1.Manifest{SchemaVersion: 2, MediaType: types.OCIManifestSchema1, ArtifactType: TrustArtifactType, Config: config.d, Layers: []v1.Descriptor{}}
	blobs = append(blobs, config)
	for _, k := range slices.Sorted(maps.Keys(files)) {
		m.Layers = append(m.Layers, files[k].d)
		blobs = append(blobs, files[k])
	}
	raw, err := json.Marshal(m)
	if err != nil {
		return trustBlob{}, nil, err
	}
	manifest = trustBlob{d: v1.Descriptor{MediaType: types.OCIManifestSchema1, ArtifactType: TrustArtifactType, Digest: digestOf(raw), Size: int64(len(raw)),
		Annotations: map[string]string{AnnotationTrust: TrustVersion}}, data: raw}
	return manifest, blobs, nil
}

// TrustError is trust material of a bundle that cannot be used: a file
// whose content is not the digest the bundle records (changed after the
// bundle was written), or a document that does not parse. Where names the
// bundle, the blob and the policy field.
type TrustError struct {
	Where, Reason string
}

// Error names the bundle's file and why.
func (e *TrustError) Error() string { return e.Where + ": " + e.Reason }

// readTrustBlob reads blob d of the layout at root, at most max bytes,
// and checks it is d's content.
func readTrustBlob(root *os.Root, shown string, d v1.Descriptor, max int64, what string) ([]byte, error) {
	where := fmt.Sprintf("oci:%s: trust material: %s (%s)", shown, what, blobName(d.Digest))
	if d.Digest.Algorithm != "sha256" || len(d.Digest.Hex) != 64 {
		return nil, &TrustError{Where: where, Reason: "digest " + d.Digest.String() + ": want sha256:<64 hex digits>"}
	}
	if d.Size < 0 || d.Size > max {
		return nil, &TrustError{Where: where, Reason: fmt.Sprintf("size %d: at most %d bytes are read", d.Size, max)}
	}
	f, err := openBlob(root, shown, d.Digest)
	if err != nil {
		return nil, fmt.Errorf("oci:%s: trust material: %s: %w", shown, what, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	if got := digestOf(data); int64(len(data)) != d.Size || got != d.Digest {
		return nil, &TrustError{Where: where, Reason: fmt.Sprintf("the file has %d bytes of digest %s, the bundle records %d bytes of %s: it was changed after the bundle was written; write the bundle again", len(data), got, d.Size, d.Digest)}
	}
	return data, nil
}

// readTrust reads and checks the trust material d names in the layout at
// root: the manifest, the document and every file against their digests,
// each bounded, and the document against the files (every path a policy
// names is a file of the manifest with the digest the policy records).
func readTrust(root *os.Root, shown string, d v1.Descriptor) (*Trust, error) {
	fail := func(format string, args ...any) error {
		return &TrustError{Where: fmt.Sprintf("oci:%s: trust material %s", shown, d.Digest), Reason: fmt.Sprintf(format, args...)}
	}
	raw, err := readTrustBlob(root, shown, d, maxManifestBytes, "manifest")
	if err != nil {
		return nil, err
	}
	m, err := v1.ParseManifest(bytes.NewReader(raw))
	if err != nil {
		return nil, fail("manifest: %v", err)
	}
	if m.ArtifactType != TrustArtifactType || m.Config.MediaType != TrustConfigType {
		return nil, fail("manifest: artifactType %q, config mediaType %q: want %s and %s", m.ArtifactType, m.Config.MediaType, TrustArtifactType, TrustConfigType)
	}
	if len(m.Layers) > maxTrustFiles {
		return nil, fail("manifest: %d files, more than the %d read", len(m.Layers), maxTrustFiles)
	}
	doc, err := readTrustBlob(root, shown, m.Config, maxTrustDocument, "policy document")
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{}
	for i, l := range m.Layers {
		max := int64(maxKeyFile)
		switch l.MediaType {
		case TrustKeyType:
		case TrustRootType:
			max = maxRootFile
		default:
			return nil, fail("manifest: layers[%d]: mediaType %q: want %s or %s", i, l.MediaType, TrustKeyType, TrustRootType)
		}
		what := fmt.Sprintf("file %s (%s)", l.Annotations[AnnotationTitle], l.Annotations[AnnotationTrustField])
		data, err := readTrustBlob(root, shown, l, max, what)
		if err != nil {
			return nil, err
		}
		files[l.Digest.String()] = data
	}
	var t Trust
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&t); err != nil {
		return nil, fail("policy document: %v", err)
	}
	if len(t.Policies) > maxTrustFiles {
		return nil, fail("policy document: %d policies, more than the %d read", len(t.Policies), maxTrustFiles)
	}
	for i := range t.Policies {
		p := &t.Policies[i]
		at := func(format string, args ...any) error {
			return fail("policy document: policies[%d] (%s): "+format, append([]any{i, p.At}, args...)...)
		}
		if p.At == "" || (p.Verify.Mode != "" && p.Verify.Mode != v1alpha1.VerifyRequired && p.Verify.Mode != v1alpha1.VerifyOptional) {
			return nil, at("want a field name and mode %s or %s", v1alpha1.VerifyRequired, v1alpha1.VerifyOptional)
		}
		named := append(slices.Clone(p.Verify.Keys), p.Verify.TrustedRoot)
		if p.Verify.TrustedRoot == "" {
			named = named[:len(named)-1]
		}
		if len(named) != len(p.Files) {
			return nil, at("files lists %d files, the policy names %d", len(p.Files), len(named))
		}
		p.Content = map[string][]byte{}
		for _, path := range named {
			h, ok := p.Files[path]
			if !ok {
				return nil, at("files: no digest for %s", path)
			}
			data, ok := files[h]
			if !ok {
				return nil, at("files[%q]: %s is not a file of the trust manifest", path, h)
			}
			p.Content[path] = data
		}
	}
	for image, idx := range t.Images {
		if _, err := name.ParseReference(image, name.StrictValidation); err != nil {
			return nil, fail("policy document: images[%q]: %v", image, err)
		}
		for _, i := range idx {
			if i < 0 || i >= len(t.Policies) {
				return nil, fail("policy document: images[%q]: policy %d: there are %d", image, i, len(t.Policies))
			}
		}
	}
	return &t, nil
}

// BundleTrust reads the trust material of the bundle at path (written by a
// Mirror with WithToLayout and WithTrust): the verify policies of its
// images with the files they read, each checked against the digest the
// bundle records. nil, nil when the bundle carries none. Errors: those of
// BundleImages, and *TrustError for a file whose content is not its
// digest's or a document that does not parse, naming the file.
func BundleTrust(path string) (*Trust, error) {
	root, err := os.OpenRoot(path)
	if err != nil {
		return nil, fmt.Errorf("oci:%s: not an OCI image layout: %w", path, err)
	}
	defer root.Close()
	idx, err := readBundleIndex(root, path)
	if err != nil {
		return nil, err
	}
	if !idx.stowage {
		return nil, &ForeignLayoutError{Path: path, Reason: idx.foreign}
	}
	if idx.trust == nil {
		return nil, nil
	}
	return readTrust(root, path, *idx.trust)
}

// writeTrust writes t's blobs into the bundle and returns the descriptor
// index.json lists it under; nil t writes nothing.
func (s *layoutSink) writeTrust(ctx context.Context, t *Trust) (*v1.Descriptor, error) {
	if t == nil {
		return nil, nil
	}
	m, blobs, err := t.encode()
	if err != nil {
		return nil, err
	}
	for _, b := range append(blobs, m) {
		d := v1.Descriptor{Digest: b.d.Digest, Size: b.d.Size}
		if ok, err := s.verify(d); err != nil {
			return nil, err
		} else if ok {
			continue
		}
		if err := s.writeBlob(ctx, d, bytes.NewReader(b.data)); err != nil {
			return nil, fmt.Errorf("oci:%s: trust material: %w", s.path, err)
		}
	}
	return &m.d, nil
}

// checkTrustDescriptor checks the trust descriptor of index.json.
func checkTrustDescriptor(d v1.Descriptor) error {
	switch {
	case d.Annotations[AnnotationTrust] != TrustVersion:
		return fmt.Errorf("%s is %q; this stowage reads trust material of format %q", AnnotationTrust, d.Annotations[AnnotationTrust], TrustVersion)
	case d.MediaType != types.OCIManifestSchema1:
		return fmt.Errorf("mediaType %q: the trust material is an %s", d.MediaType, types.OCIManifestSchema1)
	case d.Digest.Algorithm != "sha256" || len(d.Digest.Hex) != 64:
		return errors.New("digest: want sha256:<64 hex digits>")
	case d.Size < 0 || d.Size > maxManifestBytes:
		return fmt.Errorf("size %d: a manifest is 0 to %d bytes", d.Size, maxManifestBytes)
	}
	return nil
}
