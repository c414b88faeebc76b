package mirror

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/stowage/stowage/internal/site"
	"github.com/stowage/stowage/internal/testing/registrytest"
)

// benchImages is the size of the signed set BenchmarkAttachments mirrors.
const benchImages = 200

// signedSet pushes n two-platform indexes to host, each signed as cosign
// signs a release: a signature of the index (tag scheme, a 300-byte
// payload), an attestation (a 2 KiB envelope) and an SBOM (8 KiB) of each
// child (tag scheme), and a Sigstore bundle of the index as an OCI 1.1
// referrer (3 KiB). The children share a base layer across the set.
func signedSet(b *testing.B, host string, n int) []Image {
	b.Helper()
	base := registrytest.Layer("shared base", 64<<10)
	var out []Image
	for i := range n {
		repo, err := name.NewRepository(fmt.Sprintf("%s/team/app-%03d", host, i), name.Insecure)
		if err != nil {
			b.Fatal(err)
		}
		amd := registrytest.Image(b, base, registrytest.Layer(fmt.Sprintf("amd64 %d", i), 8<<10))
		arm := registrytest.Image(b, base, registrytest.Layer(fmt.Sprintf("arm64 %d", i), 8<<10))
		idx := registrytest.Index(amd, arm)
		if err := remote.WriteIndex(repo.Tag("v1"), idx); err != nil {
			b.Fatal(err)
		}
		h, _ := idx.Digest()
		hAmd, _ := amd.Digest()
		hArm, _ := arm.Digest()
		put := func(subject v1.Hash, kind string, mt types.MediaType, size int) {
			unit := fmt.Sprintf("%s %s %d;", kind, subject, i)
			payload := strings.Repeat(unit, size/len(unit)+1)[:size]
			if err := remote.Write(repo.Tag(attachmentTag(subject, kind)), artifact(b, mt, payload)); err != nil {
				b.Fatal(err)
			}
		}
		put(h, KindSignature, "application/vnd.dev.cosign.simplesigning.v1+json", 300)
		for _, c := range []v1.Hash{hAmd, hArm} {
			put(c, KindAttestation, "application/vnd.dsse.envelope.v1+json", 2<<10)
			put(c, KindSBOM, "text/spdx+json", 8<<10)
		}
		size, _ := idx.Size()
		ref := artifact(b, "application/vnd.dev.sigstore.bundle.v0.3+json", strings.Repeat("b", 3<<10))
		ref = mutate.ConfigMediaType(ref, "application/vnd.oci.empty.v1+json").(v1.Image)
		ref = mutate.Subject(ref, v1.Descriptor{MediaType: types.OCIImageIndex, Digest: h, Size: size}).(v1.Image)
		d, _ := ref.Digest()
		if err := remote.Write(repo.Digest(d.String()), ref); err != nil {
			b.Fatal(err)
		}
		out = append(out, Image{Name: repo.Name() + ":v1", Source: repo, Tag: "v1", Digest: h})
	}
	return out
}

// BenchmarkAttachments mirrors a signed set of benchImages images (six
// attachments each) between two in-process registries without the
// Referrers API, with and without WithAttachments, and reports per run
// the requests to the source and to the site and the blob bytes the site
// received (go test -bench Attachments -run '^$' ./internal/mirror; the
// numbers are in docs/benchmarks.md).
func BenchmarkAttachments(b *testing.B) {
	srcHost, srcCount := startRegistry(b)
	images := signedSet(b, srcHost, benchImages)
	for _, with := range []bool{false, true} {
		b.Run(fmt.Sprintf("attachments=%v", with), func(b *testing.B) {
			var srcReq, dstReq, bytes, attachments int
			for range b.N {
				b.StopTimer()
				dstHost, dstCount := startRegistry(b)
				r, err := newResolver(srcHost, dstHost)
				if err != nil {
					b.Fatal(err)
				}
				opts := []Option{WithResolver(r), WithToSite(site.Mapping{Default: dstHost + "/site"})}
				if with {
					opts = append(opts, WithAttachments())
				}
				m, err := New(opts...)
				if err != nil {
					b.Fatal(err)
				}
				srcCount.reset()
				b.StartTimer()
				plan, err := m.Plan(context.Background(), images)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := m.Run(context.Background(), plan); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				srcReq += total(srcCount)
				dstReq += total(dstCount)
				bytes += int(dstCount.bytes)
				attachments += plan.Attachments
			}
			b.ReportMetric(float64(srcReq)/float64(b.N), "source-requests/op")
			b.ReportMetric(float64(dstReq)/float64(b.N), "site-requests/op")
			b.ReportMetric(float64(bytes)/float64(b.N), "site-blob-bytes/op")
			b.ReportMetric(float64(attachments)/float64(b.N), "attachments/op")
		})
	}
}

// total is the number of requests c served.
func total(c *counting) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, v := range c.requests {
		n += v
	}
	return n
}
