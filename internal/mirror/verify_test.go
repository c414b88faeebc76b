package mirror

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// lying wraps a destination registry: it accepts the PUT of the manifests
// lose names and keeps nothing (201 with the digest of the body, as a
// registry that loses data after accepting it answers), and answers HEAD
// of the manifests swap names with another digest. Paths are matched by
// their end ("/team/app-a/manifests/v1").
type lying struct {
	next       http.Handler
	lose, swap []string

	mu    sync.Mutex
	heads map[string]int
}

// otherDigest is the digest the swapped manifests are claimed to have.
var otherDigest = v1.Hash{Algorithm: "sha256", Hex: strings.Repeat("e", 64)}

func (l *lying) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	match := func(list []string) bool {
		for _, s := range list {
			if strings.HasSuffix(r.URL.Path, s) {
				return true
			}
		}
		return false
	}
	switch {
	case r.Method == http.MethodPut && match(l.lose):
		h, _, err := v1.SHA256(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Docker-Content-Digest", h.String())
		w.Header().Set("Location", r.URL.Path)
		w.WriteHeader(http.StatusCreated)
		return
	case r.Method == http.MethodHead && strings.Contains(r.URL.Path, "/manifests/"):
		l.mu.Lock()
		if l.heads == nil {
			l.heads = map[string]int{}
		}
		l.heads[r.URL.Path]++
		l.mu.Unlock()
		if match(l.swap) {
			rec := &headerOnly{ResponseWriter: w}
			l.next.ServeHTTP(rec, r)
			return
		}
	}
	l.next.ServeHTTP(w, r)
}

// headerOnly passes an answer on with its Docker-Content-Digest replaced
// by otherDigest when the answer is a success.
type headerOnly struct {
	http.ResponseWriter
}

func (h *headerOnly) WriteHeader(code int) {
	if code/100 == 2 {
		h.Header().Set("Docker-Content-Digest", otherDigest.String())
	}
	h.ResponseWriter.WriteHeader(code)
}

// TestRunVerifiesAtTheDestination: after copying, Run asks the
// destination for every copied image and compares the digest it answers
// with the lock's. A destination that accepted a manifest and lost it,
// and one that answers with another digest, each fail that image by name
// (the others are copied), instead of a report that they are there.
func TestRunVerifiesAtTheDestination(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	liar := &lying{
		next: f.dstCount.next,
		lose: []string{"/team/app-a/manifests/v1"},
		swap: []string{"/team/app-b/manifests/v2"},
	}
	f.dstCount.next = liar
	m := f.mirror(t, WithToSite(f.site()))
	plan, err := m.Plan(ctx, f.images)
	if err != nil || len(plan.Errors) > 0 {
		t.Fatalf("plan: %v %v", err, plan.Errors)
	}
	if plan.Missing() != 4 {
		t.Fatalf("missing %d, want 4", plan.Missing())
	}
	rep, err := m.Run(ctx, plan)
	var es Errors
	if !errors.As(err, &es) || len(es) != 2 {
		t.Fatalf("Run: %v, want two image errors", err)
	}
	if rep.Copied != 2 || rep.Present != 0 {
		t.Errorf("copied %d present %d, want 2 and 0", rep.Copied, rep.Present)
	}
	got := map[string]string{}
	for _, e := range es {
		got[e.Key] = e.Op + ": " + e.Answer
	}
	appA, appB := f.images[0].Name, f.images[1].Name
	if want := "verify: HEAD manifest v1: not found at the destination after the copy"; got[appA] != want {
		t.Errorf("%s (manifest lost): %q, want %q", appA, got[appA], want)
	}
	if want := "verify: HEAD manifest v2: the destination has digest " + otherDigest.String() + ", the lock pins " + f.images[1].Digest.String(); got[appB] != want {
		t.Errorf("%s (another digest): %q, want %q", appB, got[appB], want)
	}
	// Every copied image was asked for at the destination by its tag
	// after the copy (the plan asked once before it).
	for _, img := range f.images {
		to, err := f.site().Repository(img.Source)
		if err != nil {
			t.Fatal(err)
		}
		p := "/v2/" + to.RepositoryStr() + "/manifests/" + img.Tag
		liar.mu.Lock()
		n := liar.heads[p]
		liar.mu.Unlock()
		if n < 2 {
			t.Errorf("%s: %d HEAD of %s at the destination, want the plan's and the verification's", img.Name, n, p)
		}
	}
}
