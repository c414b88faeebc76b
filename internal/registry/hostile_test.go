package registry_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/internal/plan"
	"github.com/stowage/stowage/internal/registry"
	"github.com/stowage/stowage/internal/testing/registrytest"
)

// TestCredentialSpellingsScrubbed: a registry whose error answers echo the
// credentials in every spelling — the password, the base64 of
// "user:password", the Authorization header value, the bearer token and the
// refresh token of its token answer — gets each replaced in the error.
func TestCredentialSpellingsScrubbed(t *testing.T) {
	const (
		user    = "alice"
		pw      = "Pw-canary-7c1e"
		token   = "bearer-canary-token-91ab"
		refresh = "refresh-canary-token-03fd"
	)
	basic := base64.StdEncoding.EncodeToString([]byte(user + ":" + pw))
	h, f := server(t)
	f.Add(registrytest.Rule{Path: "/token", Fault: func(w http.ResponseWriter, r *http.Request, _ http.Handler) {
		json.NewEncoder(w).Encode(map[string]string{"token": token, "refresh_token": refresh})
	}})
	f.Add(registrytest.Rule{Path: "/v2/", Fault: func(w http.ResponseWriter, r *http.Request, _ http.Handler) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="http://`+r.Host+`/token",service="test"`)
		w.WriteHeader(http.StatusUnauthorized)
		msg, _ := json.Marshal(strings.Join([]string{"got", r.Header.Get("Authorization"), "plain", pw, "basic", basic, "refresh", refresh, "token", token}, " "))
		w.Write([]byte(`{"errors":[{"code":"UNAUTHORIZED","message":` + string(msg) + `}]}`))
	}})
	r := resolver(t, registry.WithInsecure(h), registry.WithPasswords(func(string) ([]byte, error) { return []byte(pw), nil }))
	img := image(t, h+"/a/app:1")
	img.Auth = &v1alpha1.Auth{Username: user, Password: "env:P"}
	_, err := r.Lock(context.Background(), nil, []*plan.Image{img}, registry.Fill)
	if err == nil {
		t.Fatal("Lock succeeded against a registry refusing everything")
	}
	msg := err.Error()
	for _, s := range []string{pw, basic, token, refresh, base64.StdEncoding.EncodeToString([]byte(pw))} {
		if strings.Contains(msg, s) {
			t.Errorf("error carries %q:\n%s", s, msg)
		}
	}
	if !strings.Contains(msg, "got Bearer *** plain *** basic *** refresh *** token ***") {
		t.Errorf("error = %s\nwant the registry's message with every credential replaced", msg)
	}
}

// TestPasswordEchoedEveryWay: a hostile registry answers 401 with a body
// echoing the password in one spelling per case (plain, upper case,
// base64 and base64url inside a longer value at each alignment,
// URL-encoded, JSON-escaped by its encoder, hex); the error stowage shows
// keeps the registry's words and none of the spelling.
func TestPasswordEchoedEveryWay(t *testing.T) {
	const user, pw = "alice", `Pw/canary+7c1e&<ok>`
	spellings := map[string]string{
		"plain":         pw,
		"upper case":    strings.ToUpper(pw),
		"query escaped": url.QueryEscape(pw),
		"path escaped":  url.PathEscape(pw),
		"hex":           hex.EncodeToString([]byte(pw)),
		"HEX":           strings.ToUpper(hex.EncodeToString([]byte(pw))),
	}
	for a := range 3 {
		inner := strings.Repeat("z", 5+a) + pw + "!"
		spellings[fmt.Sprintf("base64, alignment %d", a)] = base64.StdEncoding.EncodeToString([]byte(inner))
		spellings[fmt.Sprintf("base64url, alignment %d", a)] = base64.RawURLEncoding.EncodeToString([]byte(inner))
	}
	for name, echo := range spellings {
		t.Run(name, func(t *testing.T) {
			h, f := server(t)
			f.Add(registrytest.Rule{Path: "/v2/", Fault: func(w http.ResponseWriter, r *http.Request, _ http.Handler) {
				w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
				w.WriteHeader(http.StatusUnauthorized)
				// The encoder escapes < > & as \u003c \u003e \u0026 in the
				// plain case: the JSON-escaped spelling.
				msg, _ := json.Marshal("denied [" + echo + "] for you")
				w.Write([]byte(`{"errors":[{"code":"UNAUTHORIZED","message":` + string(msg) + `}]}`))
			}})
			r := resolver(t, registry.WithInsecure(h), registry.WithPasswords(func(string) ([]byte, error) { return []byte(pw), nil }))
			img := image(t, h+"/a/app:1")
			img.Auth = &v1alpha1.Auth{Username: user, Password: "env:P"}
			_, err := r.Lock(context.Background(), nil, []*plan.Image{img}, registry.Fill)
			if err == nil {
				t.Fatal("Lock succeeded against a registry refusing everything")
			}
			msg := err.Error()
			if !strings.Contains(msg, "denied [") || !strings.Contains(msg, "] for you") || !strings.Contains(msg, "***") {
				t.Errorf("error = %s\nwant the registry's words with the password masked", msg)
			}
			// What depends on the password alone: the echo, less up to
			// two characters of base64 at each end.
			core := echo
			if strings.HasPrefix(name, "base64") {
				core = echo[len(echo)/4 : len(echo)*3/4]
			}
			if strings.Contains(strings.ToLower(msg), strings.ToLower(core)) || strings.Contains(msg, pw) {
				t.Errorf("error carries the password (%s):\n%s", name, msg)
			}
		})
	}
}

// TestTokenRealmOnAnotherHost: a registry that names a token realm on
// another host (localhost:PORT for a registry on 127.0.0.1:PORT2) does not
// get the config's credentials sent there, and the error says how to trust
// it; with WithTrustedRealm the realm gets them.
func TestTokenRealmOnAnotherHost(t *testing.T) {
	const user, pw = "alice", "Pw-canary-realm-44"
	var mu sync.Mutex
	var seen []string
	realm := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		mu.Lock()
		seen = append(seen, r.Header.Get("Authorization")+" "+r.Form.Encode())
		mu.Unlock()
		w.WriteHeader(http.StatusUnauthorized)
	}))
	t.Cleanup(realm.Close)
	realmHost := "localhost:" + realm.URL[strings.LastIndex(realm.URL, ":")+1:]
	h, f := server(t)
	f.Add(registrytest.Rule{Path: "/v2/", Fault: func(w http.ResponseWriter, r *http.Request, _ http.Handler) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="http://`+realmHost+`/token",service="test"`)
		w.WriteHeader(http.StatusUnauthorized)
	}})
	for _, trusted := range []bool{false, true} {
		seen = nil
		opts := []registry.Option{registry.WithInsecure(h, realmHost), registry.WithPasswords(func(string) ([]byte, error) { return []byte(pw), nil })}
		if trusted {
			opts = append(opts, registry.WithTrustedRealm(realmHost))
		}
		r := resolver(t, opts...)
		img := image(t, h+"/a/app:1")
		img.Auth = &v1alpha1.Auth{Username: user, Password: "env:P"}
		_, err := r.Lock(context.Background(), nil, []*plan.Image{img}, registry.Fill)
		if err == nil {
			t.Fatal("Lock succeeded")
		}
		mu.Lock()
		got := strings.Join(seen, "\n")
		mu.Unlock()
		if len(seen) == 0 {
			t.Fatalf("trusted=%v: the realm got no request: %v", trusted, err)
		}
		basic := base64.StdEncoding.EncodeToString([]byte(user + ":" + pw))
		if trusted != strings.Contains(got, basic) || strings.Contains(got, pw) {
			t.Errorf("trusted=%v: the realm received %q", trusted, got)
		}
		want := "the registry asked for a token from " + realmHost + ", which is not its own host, so no credentials were sent there; trust it with --trust-token-realm " + realmHost
		if !trusted && !strings.Contains(err.Error(), want) {
			t.Errorf("error = %v\nwant it to say %q", err, want)
		}
	}
}

// TestRedirectLimit: a registry that redirects to itself is followed at
// most registry.MaxRedirects times per attempt, and the error says so.
func TestRedirectLimit(t *testing.T) {
	h, f := server(t)
	f.Add(registrytest.Rule{Path: "/a/app/manifests/", Fault: func(w http.ResponseWriter, r *http.Request, _ http.Handler) {
		http.Redirect(w, r, r.URL.Path, http.StatusTemporaryRedirect)
	}})
	r := resolver(t, registry.WithInsecure(h))
	_, err := r.Lock(context.Background(), nil, []*plan.Image{image(t, h+"/a/app:1")}, registry.Fill)
	if err == nil || !strings.Contains(err.Error(), "stopped after 10 redirects") {
		t.Fatalf("err = %v, want the redirect limit", err)
	}
	if n := f.Count("GET", "/v2/a/app/manifests/1"); n != registry.MaxRedirects+1 {
		t.Errorf("%d GETs of the manifest, want %d (the first and 10 redirects, never retried)", n, registry.MaxRedirects+1)
	}
}

// serveManifests answers GETs of the given manifest paths with the bodies
// (media type from each body's mediaType field).
func serveManifests(f *registrytest.Faults, bodies map[string]string) {
	for path, body := range bodies {
		f.Add(registrytest.Rule{Path: path, Fault: func(w http.ResponseWriter, r *http.Request, _ http.Handler) {
			var m struct {
				MediaType string `json:"mediaType"`
			}
			json.Unmarshal([]byte(body), &m)
			w.Header().Set("Content-Type", m.MediaType)
			w.Header().Set("Docker-Content-Digest", digestOf(body))
			w.Write([]byte(body))
		}})
	}
}

func digestOf(body string) string {
	h := sha256.Sum256([]byte(body))
	return "sha256:" + hex.EncodeToString(h[:])
}

// TestRegistryValuesValidated: negative sizes, sizes whose sum overflows
// and a platform variant outside the OCI grammar ("v8/../x") are refused
// with the image named, before they reach a lock (issue 14: they were
// written, and every command then refused that lock).
func TestRegistryValuesValidated(t *testing.T) {
	const cfg = `{"mediaType":"application/vnd.oci.image.config.v1+json","size":%d,"digest":"sha256:` + "1111111111111111111111111111111111111111111111111111111111111111" + `"}`
	layer := func(size string) string {
		return `{"mediaType":"application/vnd.oci.image.layer.v1.tar+gzip","size":` + size + `,"digest":"sha256:2222222222222222222222222222222222222222222222222222222222222222"}`
	}
	manifest := func(cfgSize int, layers ...string) string {
		return `{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":` + fmt.Sprintf(cfg, cfgSize) + `,"layers":[` + strings.Join(layers, ",") + `]}`
	}
	child := manifest(10, layer("20"))
	index := `{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","size":` +
		fmt.Sprint(len(child)) + `,"digest":"` + digestOf(child) + `","platform":{"os":"linux","architecture":"arm64","variant":"v8/../x"}}]}`
	for _, tc := range []struct {
		name   string
		bodies map[string]string
		want   string
	}{
		{"negative layer size", map[string]string{"/a/app/manifests/1": manifest(10, layer("-5"))}, "layer 0 size -5 is negative"},
		{"negative config size", map[string]string{"/a/app/manifests/1": manifest(-1, layer("5"))}, "config size -1 is negative"},
		{"sizes overflow", map[string]string{"/a/app/manifests/1": manifest(10, layer("9223372036854775000"), layer("9223372036854775000"))}, "overflow"},
		{"platform variant v8/../x", map[string]string{"/a/app/manifests/1": index, "/a/app/manifests/" + digestOf(child): child}, "the registry's answer cannot be recorded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, f := server(t)
			serveManifests(f, tc.bodies)
			r := resolver(t, registry.WithInsecure(h))
			l, err := r.Lock(context.Background(), nil, []*plan.Image{image(t, h+"/a/app:1")}, registry.Fill)
			if err == nil {
				t.Fatalf("Lock recorded %+v", l.Entries)
			}
			if !strings.Contains(err.Error(), `image "`+h+`/a/app:1"`) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v\nwant the image named and %q", err, tc.want)
			}
		})
	}
}

// TestIndexChildrenBounded: an index listing more than
// registry.MaxIndexChildren children is refused before any child is read.
func TestIndexChildrenBounded(t *testing.T) {
	var ms []string
	for i := range registry.MaxIndexChildren + 1 {
		ms = append(ms, fmt.Sprintf(`{"mediaType":"application/vnd.oci.image.manifest.v1+json","size":1,"digest":"sha256:%064x","platform":{"os":"linux","architecture":"amd64","variant":"v%d"}}`, i, i))
	}
	index := `{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[` + strings.Join(ms, ",") + `]}`
	h, f := server(t)
	serveManifests(f, map[string]string{"/a/app/manifests/1": index})
	r := resolver(t, registry.WithInsecure(h))
	_, err := r.Lock(context.Background(), nil, []*plan.Image{image(t, h+"/a/app:1")}, registry.Fill)
	if err == nil || !strings.Contains(err.Error(), "the index lists 1001 child manifests, more than the 1000 stowage reads") {
		t.Fatalf("err = %v", err)
	}
	if n := len(f.Requests()); n > 3 {
		t.Errorf("%d requests, want the ping and the index only", n)
	}
}

// TestManifestSizeBounded: a registry answering a manifest GET with 50 MB,
// announced or streamed without a length, is refused at
// registry.MaxManifestBytes, naming the image, after reading at most the
// bound and one more byte; go-containerregistry alone reads 100 MiB.
func TestManifestSizeBounded(t *testing.T) {
	const huge = 50 << 20
	for _, announced := range []bool{true, false} {
		t.Run(fmt.Sprintf("announced=%v", announced), func(t *testing.T) {
			var (
				mu   sync.Mutex
				sent int64
			)
			h, f := server(t)
			f.Add(registrytest.Rule{Path: "/a/app/manifests/", Fault: func(w http.ResponseWriter, r *http.Request, _ http.Handler) {
				w.Header().Set("Content-Type", "application/vnd.oci.image.manifest.v1+json")
				if announced {
					w.Header().Set("Content-Length", fmt.Sprint(huge))
				}
				w.WriteHeader(http.StatusOK)
				chunk := []byte(strings.Repeat(" ", 64<<10))
				for i := 0; i < huge/len(chunk); i++ {
					n, err := w.Write(chunk)
					mu.Lock()
					sent += int64(n)
					mu.Unlock()
					if err != nil {
						return
					}
				}
			}})
			r := resolver(t, registry.WithInsecure(h), registry.WithRetry(1, 0))
			_, err := r.Lock(context.Background(), nil, []*plan.Image{image(t, h+"/a/app:1")}, registry.Fill)
			if err == nil || !strings.Contains(err.Error(), `image "`+h+`/a/app:1"`) || !strings.Contains(err.Error(), "more than the 4194304 bytes stowage reads") {
				t.Fatalf("err = %v", err)
			}
			mu.Lock()
			defer mu.Unlock()
			if sent >= huge {
				t.Errorf("the whole %d bytes were read", sent)
			}
		})
	}
}

// TestIndexChildReadOnce: an index listing one child under 1,000
// platforms reads that child once, not once per listing.
func TestIndexChildReadOnce(t *testing.T) {
	const cfg = `{"mediaType":"application/vnd.oci.image.config.v1+json","size":10,"digest":"sha256:1111111111111111111111111111111111111111111111111111111111111111"}`
	child := `{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":` + cfg + `,"layers":[]}`
	var ms []string
	for i := range registry.MaxIndexChildren {
		ms = append(ms, fmt.Sprintf(`{"mediaType":"application/vnd.oci.image.manifest.v1+json","size":%d,"digest":"%s","platform":{"os":"linux","architecture":"amd64","variant":"v%d"}}`, len(child), digestOf(child), i))
	}
	index := `{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[` + strings.Join(ms, ",") + `]}`
	h, f := server(t)
	serveManifests(f, map[string]string{"/a/app/manifests/1": index, "/a/app/manifests/" + digestOf(child): child})
	r := resolver(t, registry.WithInsecure(h))
	l, err := r.Lock(context.Background(), nil, []*plan.Image{image(t, h+"/a/app:1")}, registry.Fill)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(l.Entries[0].Platforms); n != registry.MaxIndexChildren {
		t.Errorf("%d platforms recorded, want %d", n, registry.MaxIndexChildren)
	}
	if n := f.Count("GET", "/v2/a/app/manifests/"+digestOf(child)); n != 1 {
		t.Errorf("the child was read %d times, want once", n)
	}
}

// TestNestedIndexNotFollowed: a hostile registry whose index lists one
// child 1,000 times as an image manifest, the child being in fact an index
// that leads down a chain of 50 more: lock reads the index and that child
// once each, and refuses the image naming the child, instead of following
// the chain (go-containerregistry resolves an index it gets for an image
// to one of its children, and so on down, one request per level).
func TestNestedIndexNotFollowed(t *testing.T) {
	const cfg = `{"mediaType":"application/vnd.oci.image.config.v1+json","size":10,"digest":"sha256:1111111111111111111111111111111111111111111111111111111111111111"}`
	bottom := `{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":` + cfg + `,"layers":[]}`
	bodies := map[string]string{"/a/app/manifests/" + digestOf(bottom): bottom}
	next, nextType := bottom, "application/vnd.oci.image.manifest.v1+json"
	for range 50 {
		idx := fmt.Sprintf(`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[{"mediaType":%q,"size":%d,"digest":%q,"platform":{"os":"linux","architecture":"amd64"}}]}`, nextType, len(next), digestOf(next))
		bodies["/a/app/manifests/"+digestOf(idx)] = idx
		next, nextType = idx, "application/vnd.oci.image.index.v1+json"
	}
	child := next
	var ms []string
	for i := range registry.MaxIndexChildren {
		ms = append(ms, fmt.Sprintf(`{"mediaType":"application/vnd.oci.image.manifest.v1+json","size":%d,"digest":"%s","platform":{"os":"linux","architecture":"amd64","variant":"v%d"}}`, len(child), digestOf(child), i))
	}
	top := `{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[` + strings.Join(ms, ",") + `]}`
	bodies["/a/app/manifests/1"] = top
	h, f := server(t)
	serveManifests(f, bodies)
	r := resolver(t, registry.WithInsecure(h))
	l, err := r.Lock(context.Background(), nil, []*plan.Image{image(t, h+"/a/app:1")}, registry.Fill)
	want := "child " + digestOf(child) + " is listed as an image manifest, and the registry serves an index"
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), `image "`+h+`/a/app:1"`) {
		t.Fatalf("err = %v, lock %+v\nwant %q", err, l, want)
	}
	if gets := f.Count("", "/manifests/"); gets != 2 {
		t.Errorf("%d manifest requests, want 2 (the index and its child, once each): %v", gets, f.Requests())
	}
}
