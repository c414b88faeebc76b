package registrytest

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// ArtifactFile is one file of a model artifact: its name (one path
// element, as a layer title or a tar entry) and its bytes.
type ArtifactFile struct {
	Name string
	Data []byte
}

// ArtifactKind says how Artifact lays the files out.
type ArtifactKind int

const (
	// ArtifactImage is an OCI image whose layers are the files, one
	// uncompressed tar layer each (the file at the layer's root, mode
	// 0444), its config an OCI image config (linux and this machine's
	// architecture, the layers' diff IDs) and the manifest's artifactType
	// set: what containerd 2.x unpacks and mounts as an image volume.
	ArtifactImage ArtifactKind = iota
	// ArtifactEmptyConfig is an OCI 1.1 artifact: the empty config
	// descriptor (application/vnd.oci.empty.v1+json, "{}"), and each file
	// a layer of its own bytes (RawLayerType) titled with
	// org.opencontainers.image.title.
	ArtifactEmptyConfig
	// ArtifactCustomConfig is an artifact whose config has a media type
	// of its own (CustomConfigType, a small JSON document), with raw
	// layers as ArtifactEmptyConfig.
	ArtifactCustomConfig
)

// Media types of the artifacts Artifact builds. They follow the CNCF
// model packaging conventions in shape; stowage reads none of them.
const (
	// RawLayerType is the media type of a raw file layer.
	RawLayerType types.MediaType = "application/vnd.cncf.model.weight.v1.raw"
	// CustomConfigType is the config media type of ArtifactCustomConfig.
	CustomConfigType types.MediaType = "application/vnd.cncf.model.config.v1+json"
	// EmptyConfigType is the OCI empty descriptor's media type.
	EmptyConfigType types.MediaType = "application/vnd.oci.empty.v1+json"
	// TitleAnnotation names a raw layer's file.
	TitleAnnotation = "org.opencontainers.image.title"
)

// Artifact returns an artifact of kind holding files, with the manifest's
// artifactType (required). The same arguments give the same digest on one
// architecture. Errors: no file, an empty or path-like file name, or an
// empty artifactType.
func Artifact(kind ArtifactKind, artifactType string, files []ArtifactFile) (v1.Image, error) {
	if artifactType == "" {
		return nil, errors.New("an artifact needs an artifactType")
	}
	if len(files) == 0 {
		return nil, errors.New("an artifact needs at least one file")
	}
	a := &artifact{layers: map[v1.Hash]partial.CompressedLayer{}}
	m := v1.Manifest{SchemaVersion: 2, MediaType: types.OCIManifestSchema1, ArtifactType: artifactType}
	var diffIDs []v1.Hash
	for _, f := range files {
		if f.Name == "" || bytes.ContainsAny([]byte(f.Name), "/\x00") || f.Name == "." || f.Name == ".." {
			return nil, fmt.Errorf("artifact file name %q: want one path element", f.Name)
		}
		var (
			l    v1.Layer
			anns map[string]string
		)
		if kind == ArtifactImage {
			b, err := tarOf(f)
			if err != nil {
				return nil, err
			}
			l = static.NewLayer(b, types.OCIUncompressedLayer)
		} else {
			l = static.NewLayer(f.Data, RawLayerType)
			anns = map[string]string{TitleAnnotation: f.Name}
		}
		d, err := partial.Descriptor(l)
		if err != nil {
			return nil, err
		}
		d.Annotations = anns
		m.Layers = append(m.Layers, *d)
		a.layers[d.Digest] = l
		diffIDs = append(diffIDs, d.Digest)
	}
	switch kind {
	case ArtifactImage:
		cfg := v1.ConfigFile{OS: "linux", Architecture: runtime.GOARCH, RootFS: v1.RootFS{Type: "layers", DiffIDs: diffIDs}}
		b, err := json.Marshal(cfg)
		if err != nil {
			return nil, err
		}
		a.config, m.Config.MediaType = b, types.OCIConfigJSON
	case ArtifactEmptyConfig:
		a.config, m.Config.MediaType = []byte("{}"), EmptyConfigType
		m.Config.Data = a.config
	case ArtifactCustomConfig:
		a.config, m.Config.MediaType = []byte(`{"descriptor":{"name":"stowage-test-model"},"config":{"format":"raw"}}`), CustomConfigType
	default:
		return nil, fmt.Errorf("unknown artifact kind %d", kind)
	}
	h, n, err := v1.SHA256(bytes.NewReader(a.config))
	if err != nil {
		return nil, err
	}
	m.Config.Digest, m.Config.Size = h, n
	if a.manifest, err = json.Marshal(m); err != nil {
		return nil, err
	}
	return partial.CompressedToImage(a)
}

// PseudoRandom returns n bytes from a ChaCha8 stream seeded by seed: the
// same seed gives the same bytes, and they do not compress, as model
// weights do not.
func PseudoRandom(seed string, n int) []byte {
	var key [32]byte
	copy(key[:], seed)
	b := make([]byte, n)
	_, _ = rand.NewChaCha8(key).Read(b)
	return b
}

// tarOf is a tar stream holding f at its root: mode 0444, owner 0:0, no
// time, so it is the same for the same file.
func tarOf(f ArtifactFile) ([]byte, error) {
	var buf bytes.Buffer
	w := tar.NewWriter(&buf)
	if err := w.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: f.Name, Mode: 0o444, Size: int64(len(f.Data)), Format: tar.FormatPAX}); err != nil {
		return nil, err
	}
	if _, err := w.Write(f.Data); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// artifact is a partial.CompressedImageCore over a manifest built here.
type artifact struct {
	manifest, config []byte
	layers           map[v1.Hash]partial.CompressedLayer
}

func (a *artifact) RawConfigFile() ([]byte, error)      { return a.config, nil }
func (a *artifact) MediaType() (types.MediaType, error) { return types.OCIManifestSchema1, nil }
func (a *artifact) RawManifest() ([]byte, error)        { return a.manifest, nil }
func (a *artifact) LayerByDigest(h v1.Hash) (partial.CompressedLayer, error) {
	if l, ok := a.layers[h]; ok {
		return l, nil
	}
	// The config is a blob of the manifest too.
	if ch, _, err := v1.SHA256(bytes.NewReader(a.config)); err == nil && ch == h {
		return static.NewLayer(a.config, types.MediaType("application/octet-stream")), nil
	}
	return nil, fmt.Errorf("artifact has no blob %s", h)
}
