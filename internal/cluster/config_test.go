package cluster

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const twoContexts = `apiVersion: v1
kind: Config
clusters:
- name: a
  cluster: {server: "https://a.example:6443"}
- name: b
  cluster: {server: "http://127.0.0.1:8001"}
users:
- name: u
  user: {token: "t0ken"}
contexts:
- name: a
  context: {cluster: a, user: u}
- name: b
  context: {cluster: b, user: u}
current-context: a
`

// TestConfig: the kubeconfig comes from Kubeconfig, else $KUBECONFIG (a
// list); Context picks the context; Timeout and UserAgent are set; the
// errors say there is no cluster to read and what to pass.
func TestConfig(t *testing.T) {
	dir := t.TempDir()
	kc := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kc, []byte(twoContexts), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing")
	env := func(v string) func(string) (string, bool) {
		return func(k string) (string, bool) {
			if k == "KUBECONFIG" {
				return v, true
			}
			return "", false
		}
	}

	rc, err := Config(ConfigOptions{Kubeconfig: kc, Timeout: 7 * time.Second, UserAgent: "stowage/test (status)"})
	if err != nil || rc.Host != "https://a.example:6443" || rc.Timeout != 7*time.Second || rc.UserAgent != "stowage/test (status)" || rc.BearerToken != "t0ken" {
		t.Errorf("explicit kubeconfig: %+v, %v", rc, err)
	}
	rc, err = Config(ConfigOptions{Context: "b", Getenv: env(missing + string(os.PathListSeparator) + kc)})
	if err != nil || rc.Host != "http://127.0.0.1:8001" {
		t.Errorf("$KUBECONFIG list, context b: %+v, %v", rc, err)
	}

	_, err = Config(ConfigOptions{Kubeconfig: missing})
	if want := "no cluster to read: --kubeconfig " + missing + ": no such file or directory"; err == nil || err.Error() != want {
		t.Errorf("missing --kubeconfig: %v, want %s", err, want)
	}
	_, err = Config(ConfigOptions{Kubeconfig: kc, Context: "c"})
	if err == nil || !strings.HasPrefix(err.Error(), "no cluster to read: --kubeconfig "+kc+": ") || !strings.Contains(err.Error(), `"c"`) {
		t.Errorf("unknown context: %v", err)
	}
	if os.Getenv("KUBERNETES_SERVICE_HOST") == "" {
		_, err = Config(ConfigOptions{Getenv: env(missing)})
		if err == nil || strings.Contains(err.Error(), "KUBERNETES_MASTER") || !strings.HasPrefix(err.Error(), "no cluster to read: no kubeconfig ($KUBECONFIG or ~/.kube/config) and not in a pod: pass --kubeconfig") {
			t.Errorf("no kubeconfig, not in a pod: %v", err)
		}
	}
}
