package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stowage/stowage/internal/cluster"
	"github.com/stowage/stowage/internal/testing/testbin"
)

// hostileToken is the bearer token of the hostile API server tests.
const hostileToken = "kube-token-canary-3f9d2a71"

// apiKubeconfig writes a kubeconfig whose cluster is srv (an http:// URL,
// as kubectl proxy serves, or https:// trusting srv's certificate) with
// hostileToken, and returns its path.
func apiKubeconfig(t *testing.T, srv *httptest.Server) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "kubeconfig")
	ca := ""
	if c := srv.Certificate(); c != nil {
		ca = ", certificate-authority-data: " + base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw}))
	}
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: %q%s}}]
users: [{name: u, user: {token: %q}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`, srv.URL, ca, hostileToken)
	if err := os.WriteFile(p, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// emptyCluster answers what status reads for a cluster with no node and
// no DaemonSet.
func emptyCluster(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	switch {
	case strings.HasSuffix(r.URL.Path, "/nodes"):
		fmt.Fprint(w, `{"kind":"NodeList","apiVersion":"v1","metadata":{},"items":[]}`)
	default:
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`)
	}
}

// runBinary runs the stowage binary the tests share (testbin.Stowage) with
// args and an environment of environ's variables only, as runCLI runs the
// command line in-process, and returns stdout, stderr and the exit code.
// The run is a process of its own: what the command sets for its whole
// process (klog's logger, which status points at its stderr) touches no
// other test.
func runBinary(t *testing.T, environ map[string]string, args ...string) ([]byte, string, int) {
	t.Helper()
	cmd := exec.Command(testbin.Stowage(t), args...)
	cmd.Env = []string{}
	for k, v := range environ {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil && !errors.As(err, new(*exec.ExitError)) {
		t.Fatalf("stowage %s: %v", strings.Join(args, " "), err)
	}
	return stdout.Bytes(), stderr.String(), cmd.ProcessState.ExitCode()
}

// TestStatusHostileAPIServer: status against API servers on loopback. One
// a kubeconfig names with http:// (kubectl proxy's form) is read, and
// gets no credentials (client-go sends the kubeconfig's only over TLS);
// over https with a bearer token: a 401 echoing the token shows it in no
// spelling; a 302 to another server (another port of 127.0.0.1, which
// Go's client would send the header to, client-go adding it to every
// request anyway) is not followed, and that server sees no request; endless
// continue tokens, a page larger than asked and a huge list body end
// within the bounds, each with a message, in seconds.
func TestStatusHostileAPIServer(t *testing.T) {
	t.Parallel()
	dir := cliValidDir(t)
	var gotAuth atomic.Value
	var servers []*httptest.Server
	serve := func(t *testing.T, tls bool, h http.Handler) *httptest.Server {
		srv := httptest.NewUnstartedServer(h)
		if tls {
			srv.StartTLS()
		} else {
			srv.Start()
		}
		t.Cleanup(srv.Close)
		servers = append(servers, srv)
		return srv
	}
	runTLS := func(t *testing.T, tls bool, h http.HandlerFunc, args ...string) (string, string, int, time.Duration) {
		t.Helper()
		srv := serve(t, tls, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			gotAuth.Store(r.Header.Get("Authorization"))
			h(w, r)
		}))
		start := time.Now()
		out, stderr, code := runBinary(t, nil, append([]string{"status", dir, "--kubeconfig", apiKubeconfig(t, srv), "--deadline", "60s"}, args...)...)
		return string(out), stderr, code, time.Since(start)
	}
	run := func(t *testing.T, h http.HandlerFunc, args ...string) (string, string, int, time.Duration) {
		t.Helper()
		return runTLS(t, false, h, args...)
	}
	noToken := func(t *testing.T, text string) {
		t.Helper()
		for _, sp := range []string{hostileToken, strings.ToUpper(hostileToken), base64.StdEncoding.EncodeToString([]byte(hostileToken)), base64.RawURLEncoding.EncodeToString([]byte("x" + hostileToken))[4:20]} {
			if strings.Contains(text, sp) {
				t.Errorf("the output shows the token (%q):\n%s", sp, text)
			}
		}
	}

	t.Run("http from the kubeconfig", func(t *testing.T) {
		out, stderr, code, _ := run(t, emptyCluster)
		// Read: the profile's DaemonSet is absent, so status is not ready.
		if code != 1 || !strings.Contains(out, "profile notebooks: ") || !strings.Contains(out, "absent") {
			t.Errorf("exit %d\n%s%s", code, out, stderr)
		}
		if a, _ := gotAuth.Load().(string); a != "" {
			t.Errorf("the plain-HTTP API server got Authorization %q", a)
		}
	})

	t.Run("401 echoing the token", func(t *testing.T) {
		out, stderr, code, _ := runTLS(t, true, func(w http.ResponseWriter, r *http.Request) {
			tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprintf(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Unauthorized","code":401,"message":"token %s (%s, %s, %s) is not valid"}`,
				tok, strings.ToUpper(tok), base64.StdEncoding.EncodeToString([]byte(tok)), base64.RawURLEncoding.EncodeToString([]byte("x"+tok)))
		})
		if code != 1 || !strings.Contains(stderr, "listing nodes on https://127.0.0.1:") || !strings.Contains(stderr, "token *** (***, ***, ") {
			t.Errorf("exit %d\n%s%s", code, out, stderr)
		}
		noToken(t, out+stderr)
	})

	t.Run("302 to another server", func(t *testing.T) {
		var mu sync.Mutex
		var seen []string
		other := serve(t, true, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			seen = append(seen, r.Header.Get("Authorization"))
			mu.Unlock()
			emptyCluster(w, r)
		}))
		to := other.URL
		out, stderr, code, _ := runTLS(t, true, func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, to+r.URL.RequestURI(), http.StatusFound)
		})
		if code != 1 || !strings.Contains(stderr, "the API server redirected to "+to+", another server: not followed, so no credentials went there") || gotAuth.Load() != "Bearer "+hostileToken {
			t.Errorf("exit %d\n%s%s", code, out, stderr)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(seen) != 0 {
			t.Errorf("the other server got %d request(s), Authorization %q", len(seen), seen)
		}
	})

	t.Run("endless continue tokens", func(t *testing.T) {
		var n atomic.Int64
		out, stderr, code, took := run(t, func(w http.ResponseWriter, r *http.Request) {
			if !strings.HasSuffix(r.URL.Path, "/nodes") {
				emptyCluster(w, r)
				return
			}
			i := n.Add(1)
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"kind":"NodeList","apiVersion":"v1","metadata":{"continue":"page-%d"},"items":[{"metadata":{"name":"node-%d"}}]}`, i, i)
		})
		if code != 1 || !strings.Contains(out, "note: nodes: read only the first 50000 (a list longer than 100 pages is cut)") || n.Load() != cluster.MaxPages || took > 30*time.Second {
			t.Errorf("exit %d after %d node lists in %s\n%s%s", code, n.Load(), took, out, stderr)
		}
		// The same token again is refused at once.
		n.Store(0)
		out, stderr, code, _ = run(t, func(w http.ResponseWriter, r *http.Request) {
			if !strings.HasSuffix(r.URL.Path, "/nodes") {
				emptyCluster(w, r)
				return
			}
			n.Add(1)
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"kind":"NodeList","apiVersion":"v1","metadata":{"continue":"again"},"items":[]}`)
		})
		if code != 1 || !strings.Contains(stderr, "the API server gave the same continue token twice for nodes") || n.Load() != 2 {
			t.Errorf("exit %d after %d node lists\n%s%s", code, n.Load(), out, stderr)
		}
	})

	t.Run("a page larger than asked", func(t *testing.T) {
		out, stderr, code, _ := run(t, func(w http.ResponseWriter, r *http.Request) {
			if !strings.HasSuffix(r.URL.Path, "/nodes") {
				emptyCluster(w, r)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			items := make([]string, cluster.PageSize+1)
			for i := range items {
				items[i] = fmt.Sprintf(`{"metadata":{"name":"n%d"}}`, i)
			}
			fmt.Fprintf(w, `{"kind":"NodeList","apiVersion":"v1","metadata":{},"items":[%s]}`, strings.Join(items, ","))
		})
		if code != 1 || !strings.Contains(stderr, fmt.Sprintf("the API server returned %d nodes in one page, more than the %d asked for", cluster.PageSize+1, cluster.PageSize)) {
			t.Errorf("exit %d\n%s%s", code, out, stderr)
		}
	})

	t.Run("huge list body", func(t *testing.T) {
		var sent atomic.Int64
		out, stderr, code, took := run(t, func(w http.ResponseWriter, r *http.Request) {
			if !strings.HasSuffix(r.URL.Path, "/nodes") {
				emptyCluster(w, r)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"kind":"NodeList","apiVersion":"v1","metadata":{},"items":[{"metadata":{"name":"n","labels":{"x":"`)
			chunk := []byte(strings.Repeat("a", 1<<20))
			for sent.Load() < 2*cluster.MaxResponseBytes {
				if _, err := w.Write(chunk); err != nil {
					return
				}
				sent.Add(int64(len(chunk)))
			}
		})
		if code != 1 || !strings.Contains(stderr, "listing nodes on http://127.0.0.1:") || !strings.Contains(stderr, fmt.Sprintf("the API server's answer is larger than %d MiB, the bound of stowage status", cluster.MaxResponseBytes>>20)) || took > 30*time.Second {
			t.Errorf("exit %d in %s after %d MiB sent\n%s%s", code, took, sent.Load()>>20, out, stderr)
		}
	})

	t.Run("request timeout", func(t *testing.T) {
		out, stderr, code, took := run(t, func(w http.ResponseWriter, r *http.Request) {
			if strings.HasSuffix(r.URL.Path, "/nodes") {
				select {
				case <-r.Context().Done():
				case <-time.After(10 * time.Second):
				}
				return
			}
			emptyCluster(w, r)
		}, "--timeout", "1s")
		want := "listing nodes on http://127.0.0.1:"
		if code != 1 || !strings.Contains(stderr, want) || !strings.Contains(stderr, "the request got no answer within --timeout 1s (the limit of each request to the API server)") || strings.Contains(stderr, "--deadline") || took > 8*time.Second {
			t.Errorf("exit %d in %s\n%s%s", code, took, out, stderr)
		}
	})

	// What the API server sends in its objects and headers: a node name
	// carrying the token, an OSC title sequence, a C1 CSI and a bidi
	// override, and a Warning header carrying the token, a bidi override
	// and a zero-width space (client-go drops warnings with control
	// characters). Neither the table nor -o json nor stderr shows the
	// token, or any of them raw; client-go's default handler logged the
	// warning through klog as sent.
	hostileName := "node-" + hostileToken + "-\u001b]0;pwned\u0007-\u009b31m-\u202etxt"
	hostile := func(w http.ResponseWriter, r *http.Request) {
		tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		w.Header().Add("Warning", "299 - \"deprecated for "+tok+" \u202eevil\u200b\"")
		if strings.HasSuffix(r.URL.Path, "/nodes") {
			w.Header().Set("Content-Type", "application/json")
			name, _ := json.Marshal(hostileName)
			fmt.Fprintf(w, `{"kind":"NodeList","apiVersion":"v1","metadata":{},"items":[{"metadata":{"name":%s}}]}`, name)
			return
		}
		emptyCluster(w, r)
	}
	raw := func(t *testing.T, text string) {
		t.Helper()
		for _, c := range []string{"\x1b", "\x07", "\u009b", "\u202e", "\u200b"} {
			if strings.Contains(text, c) {
				t.Errorf("raw %q in:\n%s", c, text)
			}
		}
	}
	for _, format := range []string{"text", "json"} {
		t.Run("report contents scrubbed and escaped, "+format, func(t *testing.T) {
			out, stderr, code, _ := runTLS(t, true, hostile, "-o", format)
			noToken(t, out+stderr)
			raw(t, out+stderr)
			if code != 1 || !strings.Contains(stderr, "stowage: warning from the API server https://127.0.0.1:") || !strings.Contains(stderr, `deprecated for *** \u202eevil\u200b`) {
				t.Errorf("exit %d; want the warning once, scrubbed and escaped\n%s%s", code, out, stderr)
			}
			if n := strings.Count(stderr, "deprecated for"); n != 1 {
				t.Errorf("the warning is shown %d times, want once:\n%s", n, stderr)
			}
			if format == "json" {
				var rep struct{ Nodes []string }
				if err := json.Unmarshal([]byte(out), &rep); err != nil {
					t.Fatal(err)
				}
				if want := []string{"node-***-\x1b]0;pwned\x07-\u009b31m-\u202etxt"}; !slices.Equal(rep.Nodes, want) {
					t.Errorf("nodes %q, want %q", rep.Nodes, want)
				}
			}
		})
	}
}
