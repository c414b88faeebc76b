package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// startup is the main container of a puller with a startup gate: the
// kubelet starts it only once every init container has run, that is once
// every image and artifact of the pod is on the node. It waits until the
// pod of every other part (DaemonSet) of the puller that the node's labels
// select has started too, then opens the gate on its own node: it removes
// the startup taint with a JSON patch whose "test" op holds the taints it
// read (a concurrent change fails the patch, and it reads again), or sets
// its node condition to True on nodes/status for a NodeReadinessRule.
// Then it waits for SIGTERM like "wait".
//
// It talks to the API server the way a pod does: the address from
// KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT, the projected
// token and CA from the ServiceAccount directory (re-read for every
// request: the kubelet renews the token), its node from NODE_NAME and its
// namespace from POD_NAMESPACE (the downward API). Every wait and read is
// bounded by its flags.
type startupCmd struct {
	self      string
	parts     []part
	taint     string
	condition string
	saDir     string
	node      string
	namespace string
	server    string
	poll      time.Duration
	timeout   time.Duration
	attempts  int
	maxBody   int64
	stdout    io.Writer
	client    *http.Client
	// lastWaiting is the parts last said to be waited for.
	lastWaiting string
}

// part is one DaemonSet of the puller: its name and node selector.
type part struct {
	Name         string            `json:"name"`
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
}

// defaultServiceAccountDir is where a pod's projected token, CA and
// namespace are mounted.
const defaultServiceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount"

// parseStartup reads the startup command's flags and environment.
func parseStartup(args []string, getenv func(string) string, stdout, stderr io.Writer) (*startupCmd, error) {
	fs := flag.NewFlagSet("stowage-helper startup", flag.ContinueOnError)
	fs.SetOutput(stderr)
	c := &startupCmd{stdout: stdout}
	var partsJSON string
	fs.StringVar(&c.self, "self", "", "this pod's DaemonSet (one of --parts)")
	fs.StringVar(&partsJSON, "parts", "", "the puller's DaemonSets as JSON: [{\"name\":..., \"nodeSelector\":{...}}]")
	fs.StringVar(&c.taint, "taint", "", "remove this taint key from the node")
	fs.StringVar(&c.condition, "condition", "", "set this node condition type to True (instead of --taint)")
	fs.StringVar(&c.saDir, "serviceaccount-dir", defaultServiceAccountDir, "directory of the token and ca.crt")
	fs.DurationVar(&c.poll, "poll", 5*time.Second, "how often to look at the other parts' pods")
	fs.DurationVar(&c.timeout, "timeout", time.Hour, "give up (exit 1, the kubelet restarts the container) after this long")
	fs.IntVar(&c.attempts, "attempts", 10, "most failed requests or conflicting patches before giving up")
	fs.Int64Var(&c.maxBody, "max-response-bytes", 16<<20, "largest API server response read")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if (c.taint == "") == (c.condition == "") {
		return nil, errors.New("give exactly one of --taint and --condition")
	}
	if err := json.Unmarshal([]byte(partsJSON), &c.parts); err != nil {
		return nil, fmt.Errorf("--parts: %v", err)
	}
	found := false
	for _, p := range c.parts {
		found = found || p.Name == c.self
	}
	if !found {
		return nil, fmt.Errorf("--self %q is not one of --parts", c.self)
	}
	if c.poll <= 0 || c.timeout <= 0 || c.attempts <= 0 || c.maxBody <= 0 {
		return nil, errors.New("--poll, --timeout, --attempts and --max-response-bytes must be positive")
	}
	c.node, c.namespace = getenv("NODE_NAME"), getenv("POD_NAMESPACE")
	host, port := getenv("KUBERNETES_SERVICE_HOST"), getenv("KUBERNETES_SERVICE_PORT")
	if c.node == "" || c.namespace == "" || host == "" || port == "" {
		return nil, errors.New("NODE_NAME, POD_NAMESPACE, KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be set (the pod's downward API and service environment)")
	}
	c.server = "https://" + net.JoinHostPort(host, port)
	ca, err := os.ReadFile(filepath.Join(c.saDir, "ca.crt"))
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return nil, fmt.Errorf("%s holds no PEM certificate", filepath.Join(c.saDir, "ca.crt"))
	}
	c.client = &http.Client{
		Timeout: 30 * time.Second,
		Transport: &http.Transport{
			TLSClientConfig:     &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
			Proxy:               nil,
			TLSHandshakeTimeout: 10 * time.Second,
		},
		// The API server does not redirect these requests; a redirect
		// would take the token elsewhere.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return c, nil
}

// node is the part of a Node the helper reads.
type node struct {
	Metadata struct {
		Labels map[string]string `json:"labels"`
	} `json:"metadata"`
	Spec struct {
		Taints []json.RawMessage `json:"taints"`
	} `json:"spec"`
	Status struct {
		Conditions []struct {
			Type   string `json:"type"`
			Status string `json:"status"`
		} `json:"conditions"`
	} `json:"status"`
}

// podList is the part of a pod list the helper reads.
type podList struct {
	Items []struct {
		Metadata struct {
			Labels map[string]string `json:"labels"`
		} `json:"metadata"`
		Status struct {
			ContainerStatuses []struct {
				Started *bool `json:"started"`
				State   struct {
					Running    *struct{} `json:"running"`
					Terminated *struct{} `json:"terminated"`
				} `json:"state"`
			} `json:"containerStatuses"`
		} `json:"status"`
	} `json:"items"`
}

// errConflict is a patch the API server refused because the node changed
// since it was read (the "test" op failed).
var errConflict = errors.New("the node changed since it was read")

// run opens the gate, bounded by c.timeout and c.attempts.
func (c *startupCmd) run(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	failures := 0
	for {
		done, err := c.step(ctx)
		if done {
			return nil
		}
		if err != nil {
			failures++
			fmt.Fprintf(c.stdout, "startup: attempt %d of %d: %v\n", failures, c.attempts, err)
			if failures >= c.attempts {
				return err
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("gave up after %s: %w", c.timeout, ctx.Err())
		case <-time.After(c.poll):
		}
	}
}

// step reads the node once and, when every part the node selects has
// started, opens the gate; done is true once the gate is open.
func (c *startupCmd) step(ctx context.Context) (done bool, err error) {
	var n node
	raw, err := c.do(ctx, http.MethodGet, "/api/v1/nodes/"+url.PathEscape(c.node), "", nil)
	if err != nil {
		return false, err
	}
	if err := json.Unmarshal(raw, &n); err != nil {
		return false, fmt.Errorf("reading node %q: %v", c.node, err)
	}
	if c.open(&n) {
		fmt.Fprintf(c.stdout, "startup: the gate of node %s is open\n", c.node)
		return true, nil
	}
	waiting, err := c.waitingFor(ctx, &n)
	if err != nil || len(waiting) > 0 {
		if w := fmt.Sprintf("%q", waiting); len(waiting) > 0 && w != c.lastWaiting {
			// Said once per change, not once per poll.
			fmt.Fprintf(c.stdout, "startup: waiting for %s on node %s\n", w, c.node)
			c.lastWaiting = w
		}
		return false, err
	}
	if c.condition != "" {
		now := time.Now().UTC().Format(time.RFC3339)
		body, _ := json.Marshal(map[string]any{"status": map[string]any{"conditions": []any{map[string]any{
			"type": c.condition, "status": "True", "reason": "ImagesPresent",
			"message": "every image and artifact of the puller is on the node", "lastHeartbeatTime": now, "lastTransitionTime": now,
		}}}})
		if _, err := c.do(ctx, http.MethodPatch, "/api/v1/nodes/"+url.PathEscape(c.node)+"/status", "application/strategic-merge-patch+json", body); err != nil {
			return false, err
		}
		fmt.Fprintf(c.stdout, "startup: set condition %s=True on node %s\n", c.condition, c.node)
		return true, nil
	}
	idx := -1
	for i, t := range n.Spec.Taints {
		var k struct {
			Key string `json:"key"`
		}
		if json.Unmarshal(t, &k) == nil && k.Key == c.taint {
			idx = i
			break
		}
	}
	body, _ := json.Marshal([]any{
		map[string]any{"op": "test", "path": "/spec/taints", "value": n.Spec.Taints},
		map[string]any{"op": "remove", "path": "/spec/taints/" + strconv.Itoa(idx)},
	})
	if _, err := c.do(ctx, http.MethodPatch, "/api/v1/nodes/"+url.PathEscape(c.node), "application/json-patch+json", body); err != nil {
		return false, err
	}
	fmt.Fprintf(c.stdout, "startup: removed taint %s from node %s\n", c.taint, c.node)
	return true, nil
}

// open says whether n's gate is open: the taint is gone, or the condition
// is True.
func (c *startupCmd) open(n *node) bool {
	if c.condition != "" {
		for _, cd := range n.Status.Conditions {
			if cd.Type == c.condition {
				return cd.Status == "True"
			}
		}
		return false
	}
	for _, t := range n.Spec.Taints {
		var k struct {
			Key string `json:"key"`
		}
		if json.Unmarshal(t, &k) == nil && k.Key == c.taint {
			return false
		}
	}
	return true
}

// waitingFor returns the parts n's labels select, other than this pod's,
// whose pod on n has not started its main container (so has not pulled
// everything yet), sorted as --parts lists them.
func (c *startupCmd) waitingFor(ctx context.Context, n *node) ([]string, error) {
	var want []string
	for _, p := range c.parts {
		if p.Name != c.self && selects(p.NodeSelector, n.Metadata.Labels) {
			want = append(want, p.Name)
		}
	}
	if len(want) == 0 {
		return nil, nil
	}
	q := url.Values{"fieldSelector": {"spec.nodeName=" + c.node}, "labelSelector": {"app.kubernetes.io/name=stowage"}}
	raw, err := c.do(ctx, http.MethodGet, "/api/v1/namespaces/"+url.PathEscape(c.namespace)+"/pods?"+q.Encode(), "", nil)
	if err != nil {
		return nil, err
	}
	var pods podList
	if err := json.Unmarshal(raw, &pods); err != nil {
		return nil, fmt.Errorf("reading the pods of node %q: %v", c.node, err)
	}
	started := map[string]bool{}
	for _, p := range pods.Items {
		for _, cs := range p.Status.ContainerStatuses {
			if cs.Started != nil && *cs.Started || cs.State.Running != nil || cs.State.Terminated != nil {
				started[p.Metadata.Labels["app.kubernetes.io/instance"]] = true
			}
		}
	}
	var waiting []string
	for _, w := range want {
		if !started[w] {
			waiting = append(waiting, w)
		}
	}
	return waiting, nil
}

// selects says whether labels hold every key and value of sel.
func selects(sel, labels map[string]string) bool {
	for k, v := range sel {
		if l, ok := labels[k]; !ok || l != v {
			return false
		}
	}
	return true
}

// do sends one request with the ServiceAccount's current token and
// returns the body of a 2xx answer, read up to c.maxBody. A 409 or a
// failed patch test is errConflict; any other status is an error quoting
// the start of the API server's message.
func (c *startupCmd) do(ctx context.Context, method, path, contentType string, body []byte) ([]byte, error) {
	token, err := os.ReadFile(filepath.Join(c.saDir, "token"))
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, method, c.server+path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+string(bytes.TrimSpace(token)))
	req.Header.Set("Accept", "application/json")
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, c.maxBody+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > c.maxBody {
		return nil, fmt.Errorf("%s %s: the answer exceeds --max-response-bytes=%d", method, path, c.maxBody)
	}
	if resp.StatusCode/100 == 2 {
		return b, nil
	}
	var status struct {
		Message string `json:"message"`
	}
	_ = json.Unmarshal(b, &status)
	msg := status.Message
	if len(msg) > 1024 {
		msg = msg[:1024] + "…"
	}
	if resp.StatusCode == http.StatusConflict || resp.StatusCode == http.StatusUnprocessableEntity && bytes.Contains(b, []byte("test failed")) {
		return nil, fmt.Errorf("%s %s: %w: %q", method, path, errConflict, msg)
	}
	return nil, &apiError{Code: resp.StatusCode, Message: msg}
}

// apiError is an API server's refusal: its HTTP status and message.
type apiError struct {
	Code    int
	Message string
}

func (e *apiError) Error() string {
	return fmt.Sprintf("API server answered %d: %q", e.Code, e.Message)
}
