package mirror

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// addSize is a + b for byte counts, false when b is negative or the sum
// overflows (the sum is then left at a).
func addSize(a, b int64) (int64, bool) {
	if b < 0 || a > math.MaxInt64-b {
		return a, false
	}
	return a + b, true
}

// siteBlobs reads the manifests of the images the site holds (WithHave)
// from their sources and returns every blob they reference with the
// repository the site holds it in (the have image's Site, else its
// Source), the first in name order winning. An image that cannot be read
// contributes nothing: its blobs are then carried.
func (m *Mirror) siteBlobs(ctx context.Context, mu *sync.Mutex, nodes map[v1.Hash]*node) map[v1.Hash]string {
	have := append([]Image(nil), m.o.have...)
	sort.SliceStable(have, func(i, j int) bool {
		if have[i].Name != have[j].Name {
			return have[i].Name < have[j].Name
		}
		return have[i].Digest.String() < have[j].Digest.String()
	})
	tops := make([]*node, len(have))
	each(m.jobs, len(have), func(i int) {
		if n, f := m.read(ctx, &have[i], have[i].Digest, mu, nodes, 0, m.newBudget()); f == nil {
			tops[i] = n
		}
	})
	out := map[v1.Hash]string{}
	for i, top := range tops {
		if top == nil {
			continue
		}
		where := have[i].Site
		if where == "" {
			where = have[i].Source.Name()
		}
		visited := map[*node]bool{}
		var walk func(n *node)
		walk = func(n *node) {
			if visited[n] {
				return
			}
			visited[n] = true
			for _, c := range n.children {
				walk(c)
			}
			for _, d := range n.blobs {
				if _, ok := out[d.Digest]; !ok {
					out[d.Digest] = where
				}
			}
		}
		walk(top)
	}
	return out
}

// omitCheck is a blob left out of the delta bundle being pushed, to be
// mounted into repo from where the bundle says the site holds it.
type omitCheck struct {
	d    v1.Descriptor
	repo name.Repository
	pi   *PlannedImage
}

// leftOut reports whether blob h is missing from the bundle being pushed
// and one of the images needing it records it as left out (a delta
// bundle).
func (m *Mirror) leftOut(h v1.Hash, pairs []blobAtKey, imgs map[string]*PlannedImage) bool {
	ls, ok := m.src.(*layoutSource)
	if !ok || ls.has(h) {
		return false
	}
	for _, p := range pairs {
		if _, ok := imgs[p.key].Omitted[h]; ok {
			return true
		}
	}
	return false
}

// errLeftOutMissing is a blob a delta bundle left out that the site does
// not hold where the bundle says.
var errLeftOutMissing = errors.New("the delta bundle left it out (the site lock it was made against said the site holds it), but the site does not hold it there; write the bundle again without --have, or against the site's current lock")

// checkLeftOut HEADs each left-out blob where the bundle says the site
// holds it and plans a mount from there; an image whose blob is not there
// fails, named with the blob and the repository.
func (m *Mirror) checkLeftOut(ctx context.Context, p *Transfer, checks []omitCheck) {
	rs, ok := m.dst.(*registrySink)
	if !ok || len(checks) == 0 {
		return
	}
	from := make([]name.Repository, len(checks))
	fails := make([]*failure, len(checks))
	each(m.jobs, len(checks), func(i int) {
		c := checks[i]
		loc, err := rs.holder(&c.pi.Image, c.pi.Omitted[c.d.Digest])
		if err != nil {
			fails[i] = &failure{where: m.dst.where(c.repo), op: "left-out blob " + c.d.Digest.String(), err: err}
			return
		}
		ok, err := m.dst.hasBlob(ctx, loc, c.d.Digest)
		switch {
		case err != nil:
			fails[i] = &failure{where: m.dst.where(loc), op: "HEAD blob " + c.d.Digest.String() + " in " + loc.RepositoryStr(), err: err}
		case !ok:
			fails[i] = &failure{where: m.dst.where(loc), op: "blob " + c.d.Digest.String() + " in " + loc.RepositoryStr(), err: errLeftOutMissing}
		default:
			from[i] = loc
		}
	})
	for i, c := range checks {
		if fails[i] != nil {
			if c.pi.err == nil {
				c.pi.err = fails[i].imageError(c.pi.Image, m.o.resolver)
			}
			continue
		}
		if from[i].Name() == c.repo.Name() {
			continue
		}
		p.mounts = append(p.mounts, mount{d: c.d, repo: c.repo, from: from[i], img: c.pi})
		p.Mounts++
	}
}

// holder is the site repository that holds a blob img's bundle left out:
// where, a site repository when img names its Site, else a source
// repository put where the mapping puts it.
func (s *registrySink) holder(img *Image, where string) (name.Repository, error) {
	repo, err := name.NewRepository(where, name.StrictValidation)
	if err != nil {
		return name.Repository{}, fmt.Errorf("repository %q: %w", where, err)
	}
	if img.Site == "" {
		if s.site == nil {
			return name.Repository{}, errNoSite
		}
		if repo, err = s.site.Repository(repo); err != nil {
			return name.Repository{}, err
		}
	}
	out, _, _, err := s.r.Destination(repo)
	return out, err
}

// omittedAnnotation is Image.Omitted as AnnotationOmitted writes it.
func omittedAnnotation(om map[v1.Hash]string) string {
	var refs []string
	for h, repo := range om {
		refs = append(refs, repo+"@"+h.String())
	}
	sort.Strings(refs)
	return strings.Join(refs, " ")
}

// parseOmitted reads AnnotationOmitted: space-separated digest references
// "repository@sha256:…", at most MaxOmitted of them.
func parseOmitted(s string) (map[v1.Hash]string, error) {
	if s == "" {
		return nil, nil
	}
	fields := strings.Fields(s)
	if len(fields) > MaxOmitted {
		return nil, fmt.Errorf("lists %d blobs, more than %d", len(fields), MaxOmitted)
	}
	out := map[v1.Hash]string{}
	for _, f := range fields {
		d, err := name.NewDigest(f, name.StrictValidation)
		if err != nil {
			return nil, fmt.Errorf("%q: want repository@sha256:<hex>: %v", f, err)
		}
		h, err := v1.NewHash(d.DigestStr())
		if err != nil {
			return nil, fmt.Errorf("%q: %v", f, err)
		}
		out[h] = d.Context().Name()
	}
	return out, nil
}

// MaxOmitted bounds the blobs one image of a delta bundle may list as left
// out: 10,000 (an image has tens of layers; an index of a thousand
// children some thousands).
const MaxOmitted = 10_000
