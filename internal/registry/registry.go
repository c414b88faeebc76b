// Package registry resolves image references to digests against real
// registries, for `stowage lock`, `stowage bump` and `stowage vet --remote`.
// It is the only package of stowage that imports go-containerregistry's
// remote and transport packages; everything else sees references as parsed
// values (internal/imageref) and digests as lock entries (internal/lock).
//
// What goes over the wire, per unique normalised reference (lock key):
//
//   - a tag whose entry must be recorded (a new entry, or a changed digest)
//     is read with one GET of the manifest, with the OCI index, OCI
//     manifest, Docker manifest list and Docker v2 manifest media types in
//     Accept; the digest is the sha256 of the body, as the registry itself
//     computes it. For an index, each child with a platform is read once
//     more (its config and layer sizes are recorded);
//   - a tag whose entry is already recorded and only needs checking (bump)
//     gets one HEAD with the same Accept list: when the Docker-Content-Digest
//     header equals the recorded digest, nothing else is sent. A registry
//     that sends no Docker-Content-Digest gets a GET, and its body is
//     hashed;
//   - a digest the user wrote (a pin) is never re-resolved: a recorded pin
//     gets one HEAD by digest to check it still exists (bump, vet
//     --remote); a new pin gets one GET by digest (and its children).
//
// Every registry and repository is pinged once per run (GET /v2/, and a
// token exchange where the registry asks for one), as go-containerregistry's
// Puller does.
//
// Multi-arch policy (README, "Digests from registries"): the lock always records what
// the tag points at — the index digest for a multi-arch image, with its
// children, platforms and sizes — whatever platforms the config asks for; a
// per-image single platform is pinned by render from the recorded children.
// Requested platforms are checked against the entry, so a platform the
// index lacks fails here rather than at render.
//
// Retries, for 408, 429, 500, 502, 503 and 504 answers, connection resets
// and per-request timeouts, are go-containerregistry's own
// (remote.WithRetryBackoff, WithRetryStatusCodes, WithRetryPredicate),
// bounded in count (WithRetry) and in time; a Retry-After header delays the
// next attempt by what it asks, up to DefaultMaxRetryAfter. Plain HTTP is
// refused for every registry not marked with WithInsecure.
//
// Credentials, in this order: the config's username and password source
// (auth.username, auth.password) for the registry the config wrote them
// for; then the Docker config and its credential helpers
// (authn.DefaultKeychain, or WithKeychain); then anonymous. An auth that only
// names an existing Secret cannot be read locally and falls through to the
// keychain. No password, token or Authorization header ever appears in an
// error of this package.
package registry

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/internal/confined"
	"github.com/stowage/stowage/internal/site"
)

// Defaults of the options.
const (
	// DefaultJobs is how many references are resolved at once.
	DefaultJobs = 8
	// DefaultRequestTimeout bounds one HTTP attempt, body included.
	DefaultRequestTimeout = 30 * time.Second
	// DefaultRunTimeout bounds a whole Lock or Verify call.
	DefaultRunTimeout = 10 * time.Minute
	// DefaultAttempts is how many times one request is tried in all.
	DefaultAttempts = 3
	// DefaultBackoff is the wait before the first retry; each later wait
	// is three times the previous one (0.5 s, 1.5 s).
	DefaultBackoff = 500 * time.Millisecond
	// DefaultMaxRetryAfter caps the wait a Retry-After header can ask for.
	DefaultMaxRetryAfter = 30 * time.Second
)

// retryStatusCodes are the answers that are tried again: request timeout,
// rate limit, and the server errors a proxy or an overloaded registry gives.
var retryStatusCodes = []int{
	http.StatusRequestTimeout,
	http.StatusTooManyRequests,
	http.StatusInternalServerError,
	http.StatusBadGateway,
	http.StatusServiceUnavailable,
	http.StatusGatewayTimeout,
}

// Progress is told how many references a call will contact and, one at a
// time, that one of them is done (resolved or failed). Calls come from
// several goroutines; the implementation must be safe for that.
type Progress interface {
	Start(total int)
	Done()
}

// ProgressNames is a Progress that is also told which reference a worker
// takes up (Begin) and finishes (End, just before Done), so that it can
// show what is pending. Optional: a Progress without these methods gets
// Start and Done only.
type ProgressNames interface {
	Begin(ref string)
	End(ref string)
}

// Option configures a Resolver.
type Option func(*options) error

type options struct {
	jobs           int
	requestTimeout time.Duration
	runTimeout     time.Duration
	attempts       int
	backoff        time.Duration
	maxRetryAfter  time.Duration
	insecure       map[string]bool
	mirrors        map[string]mirror
	site           *site.Mapping
	caFile         string
	caPEM          []byte
	keychain       authn.Keychain
	passwords      func(source string) ([]byte, error)
	progress       Progress
	userAgent      string
	transport      http.RoundTripper
	trustedRealms  []string
}

// mirror is where the references of one registry are resolved instead.
type mirror struct {
	host   string // host[:port]
	prefix string // repository path prefix, "" or "a/b"
}

// WithJobs sets how many references are resolved at once (default
// DefaultJobs); n must be at least 1.
func WithJobs(n int) Option {
	return func(o *options) error {
		if err := CheckJobs(n); err != nil {
			return err
		}
		o.jobs = n
		return nil
	}
}

// CheckJobs is the rule for a number of operations run at once, here and
// in internal/mirror: nil for n >= 1, else an error naming n.
func CheckJobs(n int) error {
	if n < 1 {
		return fmt.Errorf("jobs must be at least 1, got %d", n)
	}
	return nil
}

// WithRequestTimeout bounds each HTTP attempt, from sending the request to
// reading the last byte of the answer (default DefaultRequestTimeout). An
// attempt that runs out is retried like a connection reset.
func WithRequestTimeout(d time.Duration) Option {
	return func(o *options) error {
		if d <= 0 {
			return fmt.Errorf("request timeout must be positive, got %v", d)
		}
		o.requestTimeout = d
		return nil
	}
}

// WithRunTimeout bounds a whole Lock or Verify call (default
// DefaultRunTimeout); the references not done by then fail, each named.
func WithRunTimeout(d time.Duration) Option {
	return func(o *options) error {
		if d <= 0 {
			return fmt.Errorf("run timeout must be positive, got %v", d)
		}
		o.runTimeout = d
		return nil
	}
}

// WithRetry sets how many times a request is tried in all (attempts >= 1;
// default DefaultAttempts) and the wait before the first retry (default
// DefaultBackoff; each later wait is three times longer, with up to 10%
// jitter). They go to go-containerregistry as remote.WithRetryBackoff.
func WithRetry(attempts int, backoff time.Duration) Option {
	return func(o *options) error {
		if attempts < 1 {
			return fmt.Errorf("attempts must be at least 1, got %d", attempts)
		}
		if backoff < 0 {
			return fmt.Errorf("backoff must not be negative, got %v", backoff)
		}
		o.attempts, o.backoff = attempts, backoff
		return nil
	}
}

// WithInsecure marks registries, "host[:port]" exactly as contacted (after
// any mirror), that may be reached over plain HTTP; HTTPS is still tried
// first. Every other registry is HTTPS only, loopback and private addresses
// included.
func WithInsecure(hosts ...string) Option {
	return func(o *options) error {
		for _, h := range hosts {
			reg, err := name.NewRegistry(h, name.StrictValidation)
			if err != nil || strings.ContainsAny(h, "/@") {
				return fmt.Errorf("insecure registry %q: want host[:port]", h)
			}
			o.insecure[reg.RegistryStr()] = true
		}
		return nil
	}
}

// WithMirror resolves the references of registry from (as written in
// references: "docker.io", "ghcr.io", "registry.lab.internal:5000") at to,
// "host[:port][/path/prefix]": "docker.io/library/busybox:1.31.1" with
// to "127.0.0.1:5000/hub" is read from "127.0.0.1:5000/hub/library/busybox:1.31.1".
// Lock entries keep the original names; digests are content addresses, so
// they do not depend on where they were read. The config's credentials are
// never sent to a mirror: a mirror uses the keychain, then anonymous.
func WithMirror(from, to string) Option {
	return func(o *options) error {
		reg, err := name.NewRegistry(from)
		if err != nil || strings.ContainsAny(from, "/@") {
			return fmt.Errorf("mirror %q: the registry to mirror must be host[:port]", from)
		}
		host, prefix, _ := strings.Cut(strings.Trim(to, "/"), "/")
		if _, err := name.NewRegistry(host); err != nil || host == "" {
			return fmt.Errorf("mirror %q=%q: want host[:port][/path]", from, to)
		}
		if prefix != "" {
			if _, err := name.NewRepository(host + "/" + prefix + "/x"); err != nil {
				return fmt.Errorf("mirror %q=%q: path %q is not a repository path: %v", from, to, prefix, err)
			}
		}
		o.mirrors[reg.RegistryStr()] = mirror{host: host, prefix: prefix}
		return nil
	}
}

// WithSite resolves every reference at its site registry as m maps it
// (site.Mapping.Repository: the rule render and mirror use), for example on
// the site itself once `stowage mirror` filled it. A WithMirror for a
// registry takes precedence over m. Lock entries keep the original names.
// As with WithMirror, the config's credentials are never sent to a
// repository m moves elsewhere. Errors: m's prefixes do not parse.
func WithSite(m site.Mapping) Option {
	return func(o *options) error {
		if err := m.Validate(); err != nil {
			return err
		}
		o.site = &m
		return nil
	}
}

// WithCAFile adds the PEM certificates in path to the system's trusted
// roots, for registries signed by a private CA.
func WithCAFile(path string) Option {
	return func(o *options) error {
		o.caFile = path
		return nil
	}
}

// WithCAPEM adds the PEM certificates pem, read by the caller (--ca-file -
// from standard input), to the system's trusted roots; shown names them in
// errors. It replaces WithCAFile.
func WithCAPEM(pem []byte, shown string) Option {
	return func(o *options) error {
		o.caFile, o.caPEM = shown, pem
		return nil
	}
}

// WithKeychain replaces authn.DefaultKeychain (the Docker config and its
// credential helpers) as the second source of credentials.
func WithKeychain(kc authn.Keychain) Option {
	return func(o *options) error {
		o.keychain = kc
		return nil
	}
}

// WithPasswords sets how the password source of a v1alpha1.Auth is read (see
// internal/creds). Without it, an image with config credentials fails with
// an error naming the source.
func WithPasswords(read func(source string) ([]byte, error)) Option {
	return func(o *options) error {
		o.passwords = read
		return nil
	}
}

// WithProgress reports progress to p.
func WithProgress(p Progress) Option {
	return func(o *options) error {
		o.progress = p
		return nil
	}
}

// WithUserAgent prefixes the User-Agent header (go-containerregistry adds
// its own name and version).
func WithUserAgent(ua string) Option {
	return func(o *options) error {
		o.userAgent = ua
		return nil
	}
}

// WithTransport replaces the HTTP transport under the resolver's own
// (timeouts, Retry-After, the plain-HTTP guard); the default is a clone of
// remote.DefaultTransport with WithCAFile's roots.
// WithTrustedRealm lets credentials go to the token realms on hosts
// (host[:port], as in the WWW-Authenticate realm URL) for any registry.
// Without it a registry's credentials (a Basic Authorization header, a
// password or refresh token in a token request's form) go only to a realm
// on the registry's own host; Docker Hub's auth.docker.io is trusted for
// index.docker.io. A token request to any other host is sent without
// them, so a registry answering "Bearer realm=https://elsewhere/" learns
// nothing.
func WithTrustedRealm(hosts ...string) Option {
	return func(o *options) error {
		for _, h := range hosts {
			if h == "" || strings.ContainsAny(h, "/ ") {
				return fmt.Errorf("trusted token realm %q: want host[:port]", h)
			}
		}
		o.trustedRealms = append(o.trustedRealms, hosts...)
		return nil
	}
}

// WithTransport replaces the HTTP transport under the Resolver's own
// (tests).
func WithTransport(t http.RoundTripper) Option {
	return func(o *options) error {
		o.transport = t
		return nil
	}
}

// Resolver talks to registries. It is safe for concurrent use; one
// Resolver per command run shares pings and token exchanges between images.
type Resolver struct {
	o     options
	guard *attemptTransport

	mu      sync.Mutex
	pullers map[string]*remote.Puller
	// pusher writes to destinations (Destination); made on first use.
	pusher *remote.Pusher
	// uploaders are PutBlob's clients, by repository (and mount source).
	uploaders map[string]*uploader
	// secrets are the credentials read or seen so far, removed from
	// every message in every spelling (secretSet).
	secrets *secretSet
	// passwords caches each source's read: the bytes or the error.
	passwords map[string]passwordRead
}

type passwordRead struct {
	pw  []byte
	err error
}

// OptionError is an invalid option value given to New (a flag's value on
// the command line: a usage error there); every other error of New is
// about its inputs' content or state.
type OptionError struct{ Err error }

// Error is the option's error.
func (e *OptionError) Error() string { return e.Err.Error() }

// Unwrap returns the option's error.
func (e *OptionError) Unwrap() error { return e.Err }

// New returns a Resolver with the options applied. Errors: an invalid
// option value, or a CA file that cannot be read or holds no certificate.
func New(opts ...Option) (*Resolver, error) {
	o := options{
		jobs:           DefaultJobs,
		requestTimeout: DefaultRequestTimeout,
		runTimeout:     DefaultRunTimeout,
		attempts:       DefaultAttempts,
		backoff:        DefaultBackoff,
		maxRetryAfter:  DefaultMaxRetryAfter,
		insecure:       map[string]bool{},
		mirrors:        map[string]mirror{},
		keychain:       authn.DefaultKeychain,
	}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, &OptionError{Err: err}
		}
	}
	base := o.transport
	if base == nil {
		t := remote.DefaultTransport.(*http.Transport).Clone()
		if o.caFile != "" {
			pool, err := caPool(o.caFile, o.caPEM)
			if err != nil {
				return nil, err
			}
			t.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
		}
		base = t
	}
	secrets := &secretSet{}
	trusted := map[string]bool{}
	for _, h := range o.trustedRealms {
		trusted[h] = true
	}
	return &Resolver{
		o:       o,
		secrets: secrets,
		guard: &attemptTransport{inner: wireLogTransport{inner: base}, insecure: o.insecure, timeout: o.requestTimeout, maxRetryAfter: o.maxRetryAfter,
			secrets: secrets, trustedRealms: trusted, registries: map[string]bool{}},
		pullers:   map[string]*remote.Puller{},
		passwords: map[string]passwordRead{},
	}, nil
}

// caPool is the system roots plus the PEM certificates pem, or when pem
// is nil those of the file path.
func caPool(path string, pem []byte) (*x509.CertPool, error) {
	if pem == nil {
		var err error
		if pem, err = confined.ReadPath(path, confined.CA); err != nil {
			return nil, err
		}
	}
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("CA file %s: no PEM certificate in it", path)
	}
	return pool, nil
}

// target is where a reference is read: the repository to contact (after
// any mirror, with the insecure flag), and whether it is a mirror.
type target struct {
	repo     name.Repository
	mirrored bool
}

// locate maps a repository of the config to the repository contacted.
func (r *Resolver) locate(repo name.Repository) (target, error) {
	host, path, mirrored := repo.RegistryStr(), repo.RepositoryStr(), false
	if m, ok := r.o.mirrors[host]; ok {
		host, mirrored = m.host, true
		if m.prefix != "" {
			path = m.prefix + "/" + path
		}
	} else if r.o.site != nil {
		to, err := r.o.site.Repository(repo)
		if err != nil {
			return target{}, err
		}
		mirrored = to.RegistryStr() != host || to.RepositoryStr() != path
		host, path = to.RegistryStr(), to.RepositoryStr()
	}
	var opts []name.Option
	if r.o.insecure[host] {
		opts = append(opts, name.Insecure)
	}
	out, err := name.NewRepository(host+"/"+path, opts...)
	if err != nil {
		return target{}, fmt.Errorf("repository %s at %s: %w", repo, host, err)
	}
	return target{repo: out, mirrored: mirrored}, nil
}

// puller returns the shared Puller for the credential an image uses: the
// config's Auth when given and not mirrored, else the keychain (which
// answers anonymous when it has nothing).
func (r *Resolver) puller(auth *v1alpha1.Auth, t target) (*remote.Puller, error) {
	key := "keychain"
	var authOpt remote.Option
	if auth != nil && auth.Username != "" && auth.Password != "" && !t.mirrored {
		pw, err := r.password(auth.Password)
		if err != nil {
			return nil, err
		}
		r.secrets.addBasic(auth.Username, string(pw))
		key = "basic\x00" + auth.Username + "\x00" + auth.Password
		authOpt = remote.WithAuth(authn.FromConfig(authn.AuthConfig{Username: auth.Username, Password: string(pw)}))
	} else {
		authOpt = remote.WithAuthFromKeychain(r.o.keychain)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if p, ok := r.pullers[key]; ok {
		return p, nil
	}
	p, err := remote.NewPuller(r.remoteOptions(authOpt)...)
	if err != nil {
		return nil, err
	}
	r.pullers[key] = p
	return p, nil
}

// remoteOptions are the go-containerregistry options every Puller and
// Pusher of the Resolver share, with the credential authOpt.
func (r *Resolver) remoteOptions(authOpt remote.Option) []remote.Option {
	opts := []remote.Option{
		authOpt,
		remote.WithTransport(r.guard),
		remote.WithRetryBackoff(remote.Backoff{Duration: r.o.backoff, Factor: 3, Jitter: 0.1, Steps: r.o.attempts}),
		remote.WithRetryStatusCodes(retryStatusCodes...),
		remote.WithRetryPredicate(retryable),
		// go-containerregistry limits a Puller's blob downloads to its
		// jobs (4 by default); mirror streams WithJobs blobs at once.
		remote.WithJobs(r.o.jobs),
	}
	if r.o.userAgent != "" {
		opts = append(opts, remote.WithUserAgent(r.o.userAgent))
	}
	return opts
}

// password reads a password source once per run and remembers the bytes
// so that no message can carry them.
func (r *Resolver) password(source string) ([]byte, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if got, ok := r.passwords[source]; ok {
		return got.pw, got.err
	}
	var got passwordRead
	if r.o.passwords == nil {
		got.err = fmt.Errorf("password source %s: no way to read passwords was configured", source)
	} else {
		got.pw, got.err = r.o.passwords(source)
		if got.err == nil && len(got.pw) == 0 {
			got.err = fmt.Errorf("password source %s is empty", source)
		}
	}
	if len(got.pw) > 0 {
		r.secrets.add(string(got.pw))
	}
	r.passwords[source] = got
	return got.pw, got.err
}

// scrub replaces every credential read or seen so far in s, in each of
// its spellings (secretSet).
func (r *Resolver) scrub(s string) string {
	return r.secrets.scrub(s)
}

// runContext applies the run timeout to ctx.
func (r *Resolver) runContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeoutCause(ctx, r.o.runTimeout, &RunTimeoutError{After: r.o.runTimeout})
}

// RunTimeoutError is the cause of a run's context when WithRunTimeout's
// limit is reached.
type RunTimeoutError struct {
	// After is the run timeout.
	After time.Duration
}

// Error says that the run's time limit ran out, and what it was.
func (e *RunTimeoutError) Error() string {
	return fmt.Sprintf("the run's time limit of %v ran out", e.After)
}

// errNoResolver guards against a nil receiver.
var errNoResolver = errors.New("registry: nil Resolver")
