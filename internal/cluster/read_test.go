package cluster

import (
	"context"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/stowage/stowage/internal/secret"
	"github.com/stowage/stowage/internal/status"
)

// hostileToken is the bearer token the API servers of these tests see.
const hostileToken = "kube-token-canary-3f9d2a71"

// apiServer serves h on loopback (over TLS when tls is set) and returns
// it with a client configuration carrying hostileToken, which client-go
// sends only over TLS, and the secrets to scrub.
func apiServer(t *testing.T, tls bool, h http.HandlerFunc) (*httptest.Server, *rest.Config, *secret.Set) {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	if tls {
		srv.StartTLS()
	} else {
		srv.Start()
	}
	t.Cleanup(srv.Close)
	rc := &rest.Config{Host: srv.URL, BearerToken: hostileToken, Timeout: 10 * time.Second}
	if tls {
		rc.TLSClientConfig.CAData = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	}
	s := &secret.Set{}
	AddConfigSecrets(s, rc)
	return srv, rc, s
}

// oneDaemonSet expects the DaemonSet prepull/tools.
var oneDaemonSet = &status.Expected{DaemonSets: []*appsv1.DaemonSet{{ObjectMeta: metav1.ObjectMeta{Namespace: "prepull", Name: "tools"}}}}

// answer writes a JSON body with status code.
func answer(w http.ResponseWriter, code int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	io.WriteString(w, body)
}

const notFound = `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`

// TestRead: a cluster of two node pages, the expected DaemonSet, its pods
// (asked by its selector) and the namespace's pod events is read whole,
// each list asked in pages of PageSize with the continue token the last
// page gave and the request limit of rc (client-go's timeout parameter),
// and nothing noted.
func TestRead(t *testing.T) {
	var mu sync.Mutex
	var asked []string
	_, rc, secrets := apiServer(t, false, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		asked = append(asked, r.URL.Path+"?"+r.URL.RawQuery)
		mu.Unlock()
		q := r.URL.Query()
		switch r.URL.Path {
		case "/api/v1/nodes":
			if q.Get("continue") == "" {
				answer(w, 200, `{"kind":"NodeList","apiVersion":"v1","metadata":{"continue":"p2"},"items":[{"metadata":{"name":"n1"}}]}`)
			} else {
				answer(w, 200, `{"kind":"NodeList","apiVersion":"v1","metadata":{},"items":[{"metadata":{"name":"n2"}}]}`)
			}
		case "/apis/apps/v1/namespaces/prepull/daemonsets/tools":
			answer(w, 200, `{"kind":"DaemonSet","apiVersion":"apps/v1","metadata":{"name":"tools","namespace":"prepull"},"spec":{"selector":{"matchLabels":{"app":"tools"}}}}`)
		case "/api/v1/namespaces/prepull/pods":
			answer(w, 200, `{"kind":"PodList","apiVersion":"v1","metadata":{},"items":[{"metadata":{"name":"tools-x","namespace":"prepull"}}]}`)
		case "/api/v1/namespaces/prepull/events":
			answer(w, 200, `{"kind":"EventList","apiVersion":"v1","metadata":{},"items":[{"metadata":{"name":"e1","namespace":"prepull"},"reason":"Pulled"}]}`)
		default:
			answer(w, 404, notFound)
		}
	})
	c, err := Read(context.Background(), rc, oneDaemonSet, secrets, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var nodes []string
	for _, n := range c.Nodes {
		nodes = append(nodes, n.Name)
	}
	if !slices.Equal(nodes, []string{"n1", "n2"}) || c.DaemonSets["prepull/tools"] == nil || len(c.DaemonSets) != 1 ||
		len(c.Pods) != 1 || c.Pods[0].Name != "tools-x" || len(c.Events) != 1 || c.Events[0].Reason != "Pulled" || len(c.Notes) != 0 || c.Now.IsZero() {
		t.Errorf("read nodes %q, DaemonSets %v, %d pods, %d events, notes %q", nodes, c.DaemonSets, len(c.Pods), len(c.Events), c.Notes)
	}
	want := []string{
		"/api/v1/nodes?limit=500&timeout=10s",
		"/api/v1/nodes?continue=p2&limit=500&timeout=10s",
		"/apis/apps/v1/namespaces/prepull/daemonsets/tools?timeout=10s",
		"/api/v1/namespaces/prepull/pods?labelSelector=app%3Dtools&limit=500&timeout=10s",
		"/api/v1/namespaces/prepull/events?fieldSelector=involvedObject.kind%3DPod&limit=500&timeout=10s",
	}
	if !slices.Equal(asked, want) {
		t.Errorf("requests\n%s\nwant\n%s", strings.Join(asked, "\n"), strings.Join(want, "\n"))
	}
}

// refusingTransport fails every request, as the stowage binary's
// http.DefaultTransport does.
type refusingTransport struct{}

func (refusingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	return nil, fmt.Errorf("default transport used for %s", r.URL)
}

// TestReadPlainHTTP: a plain-HTTP API server (kubectl proxy's) is read
// with a transport of the client's own, not http.DefaultTransport, which
// the binary refuses.
func TestReadPlainHTTP(t *testing.T) {
	def := http.DefaultTransport
	http.DefaultTransport = refusingTransport{}
	t.Cleanup(func() { http.DefaultTransport = def })
	_, rc, secrets := apiServer(t, false, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/v1/nodes":
			answer(w, 200, `{"kind":"NodeList","apiVersion":"v1","metadata":{},"items":[{"metadata":{"name":"n1"}}]}`)
		case "/apis/apps/v1/namespaces/prepull/daemonsets/tools":
			answer(w, 404, notFound)
		default:
			answer(w, 200, `{"kind":"List","apiVersion":"v1","metadata":{},"items":[]}`)
		}
	})
	c, err := Read(context.Background(), rc, oneDaemonSet, secrets, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Nodes) != 1 || c.Nodes[0].Name != "n1" {
		t.Errorf("nodes %+v, want n1", c.Nodes)
	}
}

// TestReadAbsentAndForbidden: a DaemonSet not in the cluster is left out
// (and its pods not listed); events the credentials may not list are a
// note, not a failure; a forbidden node list fails naming the RBAC the
// read needs.
func TestReadAbsentAndForbidden(t *testing.T) {
	forbidden := `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Forbidden","code":403,"message":"no"}`
	var podsAsked atomic.Bool
	_, rc, secrets := apiServer(t, false, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/v1/nodes":
			answer(w, 200, `{"kind":"NodeList","apiVersion":"v1","metadata":{},"items":[]}`)
		case "/api/v1/namespaces/prepull/pods":
			podsAsked.Store(true)
			answer(w, 200, `{"kind":"PodList","apiVersion":"v1","metadata":{},"items":[]}`)
		default:
			answer(w, 404, notFound)
		}
	})
	c, err := Read(context.Background(), rc, oneDaemonSet, secrets, time.Second)
	if err != nil || len(c.DaemonSets) != 0 || podsAsked.Load() || len(c.Notes) != 0 {
		t.Fatalf("absent DaemonSet: %v, %v, pods asked %v, notes %q", err, c, podsAsked.Load(), c.Notes)
	}

	_, rc, secrets = apiServer(t, false, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/v1/nodes":
			answer(w, 200, `{"kind":"NodeList","apiVersion":"v1","metadata":{},"items":[]}`)
		case "/apis/apps/v1/namespaces/prepull/daemonsets/tools":
			answer(w, 200, `{"kind":"DaemonSet","apiVersion":"apps/v1","metadata":{"name":"tools","namespace":"prepull"},"spec":{"selector":{"matchLabels":{"app":"tools"}}}}`)
		case "/api/v1/namespaces/prepull/pods":
			answer(w, 200, `{"kind":"PodList","apiVersion":"v1","metadata":{},"items":[]}`)
		default:
			answer(w, 403, forbidden)
		}
	})
	c, err = Read(context.Background(), rc, oneDaemonSet, secrets, time.Second)
	want := []string{"events in namespace prepull are not readable with these credentials: reasons come from container statuses only"}
	if err != nil || !slices.Equal(c.Notes, want) {
		t.Fatalf("forbidden events: %v, notes %q", err, c.Notes)
	}

	_, rc, secrets = apiServer(t, false, func(w http.ResponseWriter, r *http.Request) { answer(w, 403, forbidden) })
	_, err = Read(context.Background(), rc, oneDaemonSet, secrets, time.Second)
	if err == nil || !strings.HasPrefix(err.Error(), "listing nodes on "+rc.Host+": forbidden; status needs get and list on DaemonSets, Pods, Nodes and Events (examples/status/rbac.yaml): ") {
		t.Errorf("forbidden nodes: %v", err)
	}
}

// TestReadScrubsAndRefusesRedirects: over TLS the token is sent; a 401
// echoing it fails with the token masked; a redirect to another server
// (another port of 127.0.0.1) is refused and that server sees no
// request; redirects within the server are followed, at most
// MaxRedirects.
func TestReadScrubsAndRefusesRedirects(t *testing.T) {
	_, rc, secrets := apiServer(t, true, func(w http.ResponseWriter, r *http.Request) {
		tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		answer(w, 401, fmt.Sprintf(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Unauthorized","code":401,"message":"token %s (%s) is not valid"}`, tok, strings.ToUpper(tok)))
	})
	_, err := Read(context.Background(), rc, oneDaemonSet, secrets, time.Second)
	if err == nil || !strings.Contains(err.Error(), "token *** (***) is not valid") || strings.Contains(strings.ToUpper(err.Error()), strings.ToUpper(hostileToken)) {
		t.Errorf("401: %v", err)
	}

	var other int
	var mu sync.Mutex
	elsewhere := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		other++
		mu.Unlock()
		answer(w, 404, notFound)
	}))
	t.Cleanup(elsewhere.Close)
	_, rc, secrets = apiServer(t, true, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, elsewhere.URL+r.URL.RequestURI(), http.StatusFound)
	})
	_, err = Read(context.Background(), rc, oneDaemonSet, secrets, time.Second)
	if err == nil || !strings.Contains(err.Error(), "the API server redirected to "+elsewhere.URL+", another server: not followed, so no credentials went there") {
		t.Errorf("redirect elsewhere: %v", err)
	}
	mu.Lock()
	if other != 0 {
		t.Errorf("the other server got %d request(s)", other)
	}
	mu.Unlock()

	var hops atomic.Int64
	_, rc, secrets = apiServer(t, false, func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/api/v1/nodes" && r.URL.Query().Get("hop") == "":
			http.Redirect(w, r, "/moved/nodes?hop=1", http.StatusFound)
		case r.URL.Path == "/moved/nodes":
			answer(w, 200, `{"kind":"NodeList","apiVersion":"v1","metadata":{},"items":[{"metadata":{"name":"n1"}}]}`)
		case strings.HasPrefix(r.URL.Path, "/loop"):
			hops.Add(1)
			http.Redirect(w, r, fmt.Sprintf("/loop%d", hops.Load()), http.StatusFound)
		default:
			answer(w, 404, notFound)
		}
	})
	c, err := Read(context.Background(), rc, &status.Expected{}, secrets, time.Second)
	if err != nil || len(c.Nodes) != 1 {
		t.Errorf("redirect within the server: %v, %v", err, c)
	}
	hc, err := rest.HTTPClientFor(rc)
	if err != nil {
		t.Fatal(err)
	}
	hc.CheckRedirect = sameServer
	resp, err := hc.Get(rc.Host + "/loop")
	if err == nil {
		resp.Body.Close()
	}
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("more than %d redirects", MaxRedirects)) || hops.Load() != MaxRedirects+1 {
		t.Errorf("redirect loop: %v after %d hops", err, hops.Load())
	}
}

// TestCappedBody: a body of exactly the bound reads whole; one byte more
// fails with the bound's message.
func TestCappedBody(t *testing.T) {
	for _, tc := range []struct {
		body string
		err  error
	}{
		{"0123456789", nil},
		{"0123456789x", errTooLarge},
	} {
		b, err := io.ReadAll(&cappedBody{ReadCloser: io.NopCloser(strings.NewReader(tc.body)), left: 10})
		if !errors.Is(err, tc.err) || string(b) != "0123456789" {
			t.Errorf("%q: read %q, %v; want %v", tc.body, b, err, tc.err)
		}
	}
	if want := "the API server's answer is larger than 64 MiB, the bound of stowage status"; errTooLarge.Error() != want {
		t.Errorf("%q, want %q", errTooLarge, want)
	}
}

// TestReadBoundedBody: a node list body past MaxResponseBytes fails the
// read with the bound's message once the bound is reached, not after the
// server has sent it all.
func TestReadBoundedBody(t *testing.T) {
	if testing.Short() {
		t.Skip("sends 64 MiB over loopback")
	}
	var sent int64
	_, rc, secrets := apiServer(t, false, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"kind":"NodeList","apiVersion":"v1","metadata":{},"items":[{"metadata":{"name":"n","labels":{"x":"`)
		chunk := []byte(strings.Repeat("a", 1<<20))
		for sent < 2*MaxResponseBytes {
			if _, err := w.Write(chunk); err != nil {
				return
			}
			sent += int64(len(chunk))
		}
	})
	_, err := Read(context.Background(), rc, oneDaemonSet, secrets, time.Second)
	if err == nil || !strings.HasPrefix(err.Error(), "listing nodes on "+rc.Host+": ") || !strings.Contains(err.Error(), errTooLarge.Error()) {
		t.Errorf("%v", err)
	}
}

// TestPages: the paging rules, with a list standing in for the API
// server: the run's budget is shared and refuses the object past it; a
// page larger than PageSize, or a continue token given twice, fails; a
// list of more than MaxPages pages stops there with a note; the end of
// ctx stops it.
func TestPages(t *testing.T) {
	ctx := context.Background()
	pagesOf := func(n int, next func(i int) string) (func(metav1.ListOptions) (string, int, error), *[]metav1.ListOptions) {
		var got []metav1.ListOptions
		return func(o metav1.ListOptions) (string, int, error) {
			got = append(got, o)
			return next(len(got)), n, nil
		}, &got
	}
	budget := 7
	list, _ := pagesOf(3, func(i int) string { return "" })
	if note, err := pages(ctx, "nodes", &budget, list, metav1.ListOptions{}); err != nil || note != "" || budget != 4 {
		t.Errorf("first list: %q, %v, budget %d", note, err, budget)
	}
	list, got := pagesOf(2, func(i int) string { return fmt.Sprint("p", i) })
	_, err := pages(ctx, "pods of DaemonSet prepull/tools", &budget, list, metav1.ListOptions{LabelSelector: "app=tools"})
	if want := "more than 200000 objects read from the API server in one run (at pods of DaemonSet prepull/tools), the bound of stowage status"; err == nil || err.Error() != want || len(*got) != 3 {
		t.Errorf("budget: %v after %d pages, want %q", err, len(*got), want)
	}
	if o := (*got)[2]; o.Limit != PageSize || o.Continue != "p2" || o.LabelSelector != "app=tools" {
		t.Errorf("third page asked with %+v", o)
	}

	budget = MaxItems
	list, _ = pagesOf(PageSize+1, func(int) string { return "" })
	if _, err := pages(ctx, "nodes", &budget, list, metav1.ListOptions{}); err == nil || err.Error() != "the API server returned 501 nodes in one page, more than the 500 asked for" {
		t.Errorf("large page: %v", err)
	}
	list, got = pagesOf(1, func(int) string { return "again" })
	if _, err := pages(ctx, "nodes", &budget, list, metav1.ListOptions{}); err == nil || err.Error() != "the API server gave the same continue token twice for nodes" || len(*got) != 2 {
		t.Errorf("token twice: %v", err)
	}
	list, got = pagesOf(1, func(i int) string { return fmt.Sprint("p", i) })
	note, err := pages(ctx, "nodes", &budget, list, metav1.ListOptions{})
	if err != nil || note != "nodes: read only the first 50000 (a list longer than 100 pages is cut)" || len(*got) != MaxPages {
		t.Errorf("endless list: %q, %v after %d pages", note, err, len(*got))
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := pages(cctx, "nodes", &budget, list, metav1.ListOptions{}); !errors.Is(err, context.Canceled) {
		t.Errorf("ended ctx: %v", err)
	}
}

// TestReadTimeouts: a node list that stalls past the request limit is
// named as --timeout's; one that outlasts the reading's context as
// --deadline's.
func TestReadTimeouts(t *testing.T) {
	stall := func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	}
	_, rc, secrets := apiServer(t, false, stall)
	rc.Timeout = 300 * time.Millisecond
	_, err := Read(context.Background(), rc, oneDaemonSet, secrets, rc.Timeout)
	if want := "listing nodes on " + rc.Host + ": the request got no answer within --timeout 300ms (the limit of each request to the API server): "; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("request limit: %v, want %q", err, want)
	}
	rc.Timeout = 10 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err = Read(ctx, rc, oneDaemonSet, secrets, rc.Timeout)
	if want := "listing nodes on " + rc.Host + ": --deadline reached: "; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("reading's limit: %v, want %q", err, want)
	}
}
