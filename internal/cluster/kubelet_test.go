package cluster

import (
	"context"
	"maps"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stowage/stowage/internal/diskbudget"
	"github.com/stowage/stowage/internal/status"
)

// TestConfigzOncePerRun: stowage status --wait reads each kubelet's
// configz once per run, not once per reading. Over Check's readings (the
// DaemonSet never ready), a kubelet that answered (n1: 70 %, n3: no
// threshold) is asked once; one that failed (n2: 503 at first) is asked
// again at the next reading and then kept; every reading reports what is
// known. With nodes/proxy refused, the first node is asked once in the
// whole run and no other.
func TestConfigzOncePerRun(t *testing.T) {
	exp := &status.Expected{
		DaemonSets: []*appsv1.DaemonSet{{ObjectMeta: metav1.ObjectMeta{Namespace: "prepull", Name: "tools"}}},
		Pools:      []*diskbudget.Pool{{Selector: map[string]string{"kubernetes.io/os": "linux"}}},
	}
	nodes := `{"kind":"NodeList","apiVersion":"v1","metadata":{},"items":[` +
		`{"metadata":{"name":"n1","labels":{"kubernetes.io/os":"linux"}}},` +
		`{"metadata":{"name":"n2","labels":{"kubernetes.io/os":"linux"}}},` +
		`{"metadata":{"name":"n3","labels":{"kubernetes.io/os":"linux"}}},` +
		`{"metadata":{"name":"win","labels":{"kubernetes.io/os":"windows"}}}]}`
	var mu sync.Mutex
	asks := map[string]int{}
	readings := 0
	_, rc, secrets := apiServer(t, false, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if node, ok := strings.CutSuffix(strings.TrimPrefix(r.URL.Path, "/api/v1/nodes/"), "/proxy/configz"); ok {
			asks[node]++
			switch {
			case node == "n1":
				answer(w, 200, `{"kubeletconfig":{"imageGCHighThresholdPercent":70}}`)
			case node == "n2" && asks[node] == 1:
				answer(w, 503, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"ServiceUnavailable","code":503}`)
			case node == "n2":
				answer(w, 200, `{"kubeletconfig":{"imageGCHighThresholdPercent":80}}`)
			default:
				answer(w, 200, `{"kubeletconfig":{}}`)
			}
			return
		}
		switch r.URL.Path {
		case "/api/v1/nodes":
			readings++
			answer(w, 200, nodes)
		default:
			answer(w, 404, notFound)
		}
	})
	seen := newKubeletConfigs()
	want := []map[string]int{{"n1": 70}, {"n1": 70, "n2": 80}, {"n1": 70, "n2": 80}}
	for i, w := range want {
		c, err := read(context.Background(), rc, exp, secrets, time.Second, seen)
		if err != nil {
			t.Fatal(err)
		}
		if !maps.Equal(c.ImageGCHighThreshold, w) {
			t.Errorf("reading %d: thresholds %v, want %v", i+1, c.ImageGCHighThreshold, w)
		}
	}
	if wantAsks := map[string]int{"n1": 1, "n2": 2, "n3": 1}; !maps.Equal(asks, wantAsks) {
		t.Errorf("three readings of one run asked configz %v, want %v", asks, wantAsks)
	}

	// Check: one run of several readings shares what was read.
	mu.Lock()
	clear(asks)
	readings = 0
	mu.Unlock()
	rep, err := Check(context.Background(), rc, exp, secrets, CheckOptions{Timeout: time.Second, Deadline: 10 * time.Second, Wait: 200 * time.Millisecond, Interval: 20 * time.Millisecond})
	if err != nil || rep.Ready {
		t.Fatalf("Check: %v, ready %v", err, rep != nil && rep.Ready)
	}
	mu.Lock()
	if readings < 3 || !maps.Equal(asks, map[string]int{"n1": 1, "n2": 2, "n3": 1}) {
		t.Errorf("Check read the cluster %d times and asked configz %v; want 3 or more readings, n1 and n3 asked once, n2 twice", readings, asks)
	}
	mu.Unlock()

	// nodes/proxy refused: asked once in the whole run.
	refusals := 0
	_, rc, secrets = apiServer(t, false, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if strings.HasSuffix(r.URL.Path, "/proxy/configz") {
			refusals++
			answer(w, 403, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Forbidden","code":403,"message":"no"}`)
			return
		}
		if r.URL.Path == "/api/v1/nodes" {
			answer(w, 200, nodes)
			return
		}
		answer(w, 404, notFound)
	})
	seen = newKubeletConfigs()
	for range 3 {
		c, err := read(context.Background(), rc, exp, secrets, time.Second, seen)
		if err != nil || len(c.ImageGCHighThreshold) != 0 {
			t.Fatalf("refused: %v, thresholds %v", err, c.ImageGCHighThreshold)
		}
	}
	if refusals != 1 {
		t.Errorf("nodes/proxy refused: asked %d times in three readings, want 1", refusals)
	}
}
