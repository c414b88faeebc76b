package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/rest"

	"github.com/stowage/stowage/internal/secret"
)

// Bounds of what status reads from an API server, which may be hostile or
// broken: one answer's body, and redirects followed per request (only to
// the same scheme, host and port).
const (
	MaxResponseBytes = 64 << 20
	MaxRedirects     = 10
)

// kubeClient reads what stowage status needs (nodes, pods, events and
// DaemonSets) through client-go's REST client with a scheme of core/v1 and
// apps/v1 only. The generated typed clients would import
// k8s.io/client-go/kubernetes/scheme, whose package initialiser registers
// every API group and so costs every stowage command start-up time.
//
// It holds the registry client's rules: the API server's URL is taken as
// the kubeconfig writes it (http:// for kubectl proxy included), a
// redirect is followed only to the same scheme, host and port (client-go
// adds the credentials to every request it sends, so a redirect elsewhere
// would carry them there), an answer's body is read up to
// MaxResponseBytes, and every credential of the configuration is
// scrubbed, in each spelling internal/secret knows, from what is shown.
type kubeClient struct {
	core, apps *rest.RESTClient
	params     runtime.ParameterCodec
	secrets    *secret.Set
}

// newKubeClient returns clients for /api/v1 and /apis/apps/v1 on rc,
// scrubbing secrets from their errors.
func newKubeClient(rc *rest.Config, secrets *secret.Set) (*kubeClient, error) {
	s := runtime.NewScheme()
	if err := corev1.AddToScheme(s); err != nil {
		return nil, err
	}
	if err := appsv1.AddToScheme(s); err != nil {
		return nil, err
	}
	rc = rest.CopyConfig(rc)
	// A transport of the client's own: without TLS settings (an http://
	// server, kubectl proxy's) client-go would use http.DefaultTransport,
	// which the stowage binary refuses so that no library makes a request
	// it did not ask for. A proxy function is what makes client-go build
	// one; it is the one http.DefaultTransport uses.
	if rc.Proxy == nil {
		rc.Proxy = http.ProxyFromEnvironment
	}
	rc.Wrap(func(rt http.RoundTripper) http.RoundTripper { return boundedBodies{rt} })
	hc, err := rest.HTTPClientFor(rc)
	if err != nil {
		return nil, err
	}
	hc.CheckRedirect = sameServer
	codecs := serializer.NewCodecFactory(s)
	client := func(gv schema.GroupVersion, apiPath string) (*rest.RESTClient, error) {
		c := rest.CopyConfig(rc)
		c.GroupVersion = &gv
		c.APIPath = apiPath
		c.NegotiatedSerializer = codecs.WithoutConversion()
		return rest.RESTClientForConfigAndClient(c, hc)
	}
	core, err := client(corev1.SchemeGroupVersion, "/api")
	if err != nil {
		return nil, err
	}
	apps, err := client(appsv1.SchemeGroupVersion, "/apis")
	if err != nil {
		return nil, err
	}
	return &kubeClient{core: core, apps: apps, params: runtime.NewParameterCodec(s), secrets: secrets}, nil
}

// AddConfigSecrets adds the credentials of rc to s, for Read, Warnings
// and RouteKlog to scrub: its bearer token (or the token file's, at most
// 64 KiB), its basic auth password and user:password.
func AddConfigSecrets(s *secret.Set, rc *rest.Config) {
	s.Add(rc.BearerToken)
	if rc.BearerTokenFile != "" {
		if f, err := os.Open(rc.BearerTokenFile); err == nil {
			b, _ := io.ReadAll(io.LimitReader(f, 64<<10))
			f.Close()
			s.Add(strings.TrimSpace(string(b)))
		}
	}
	s.AddBasic(rc.Username, rc.Password)
}

// sameServer is the http.Client's redirect rule: at most MaxRedirects,
// each to the scheme, host and port of the first request; otherwise the
// redirect is refused and its answer returned.
func sameServer(req *http.Request, via []*http.Request) error {
	if len(via) > MaxRedirects {
		return fmt.Errorf("more than %d redirects", MaxRedirects)
	}
	first := via[0].URL
	if req.URL.Scheme != first.Scheme || req.URL.Host != first.Host {
		return fmt.Errorf("the API server redirected to %s://%s, another server: not followed, so no credentials went there", req.URL.Scheme, req.URL.Host)
	}
	return nil
}

// boundedBodies fails the read of an answer's body past MaxResponseBytes.
type boundedBodies struct{ rt http.RoundTripper }

func (b boundedBodies) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := b.rt.RoundTrip(req)
	if err != nil || resp.Body == nil {
		return resp, err
	}
	resp.Body = &cappedBody{ReadCloser: resp.Body, left: MaxResponseBytes}
	return resp, nil
}

// errTooLarge is the error of a body past MaxResponseBytes.
var errTooLarge = fmt.Errorf("the API server's answer is larger than %d MiB, the bound of stowage status", MaxResponseBytes>>20)

// cappedBody reads at most left bytes of a body; one byte more is
// errTooLarge.
type cappedBody struct {
	io.ReadCloser
	left int64
}

func (c *cappedBody) Read(p []byte) (int, error) {
	if c.left <= 0 {
		// One byte more tells a body of exactly the bound from a longer one.
		var one [1]byte
		if n, _ := c.ReadCloser.Read(one[:]); n > 0 {
			return 0, errTooLarge
		}
		return 0, io.EOF
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.ReadCloser.Read(p)
	c.left -= int64(n)
	return n, err
}

// list reads one page of resource (in namespace ns, "" for cluster-scoped)
// into out.
func (k *kubeClient) list(ctx context.Context, c *rest.RESTClient, ns, resource string, opts metav1.ListOptions, out runtime.Object) error {
	return k.scrub(c.Get().NamespaceIfScoped(ns, ns != "").Resource(resource).VersionedParams(&opts, k.params).Do(ctx).Into(out))
}

// daemonSet reads one DaemonSet.
func (k *kubeClient) daemonSet(ctx context.Context, ns, name string) (*appsv1.DaemonSet, error) {
	ds := &appsv1.DaemonSet{}
	return ds, k.scrub(k.apps.Get().Namespace(ns).Resource("daemonsets").Name(name).Do(ctx).Into(ds))
}

// scrub returns err with its message scrubbed of the configuration's
// credentials; errors.Is and errors.As still see err.
func (k *kubeClient) scrub(err error) error {
	if err == nil {
		return nil
	}
	return &scrubbedError{msg: k.secrets.Scrub(err.Error()), err: err}
}

// scrubbedError is an error whose message is scrubbed of credentials.
type scrubbedError struct {
	msg string
	err error
}

func (e *scrubbedError) Error() string { return e.msg }
func (e *scrubbedError) Unwrap() error { return e.err }

// isTimeout reports whether err is a network timeout (net.Error's
// Timeout), as net/http's client reports its own time limit.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
