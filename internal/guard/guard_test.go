package guard

import (
	"bytes"
	"log"
	"net/http"
	"os"
	"strings"
	"testing"
)

// TestRefuseDefaultHTTP: a request through the default client fails before
// any connection, naming the host.
func TestRefuseDefaultHTTP(t *testing.T) {
	saved := http.DefaultTransport
	t.Cleanup(func() { http.DefaultTransport = saved })
	RefuseDefaultHTTP()
	resp, err := http.Get("https://example.invalid/chart.tgz")
	if err == nil {
		resp.Body.Close()
		t.Fatal("the request was made")
	}
	if want := "stowage reads local files only: a request to https://example.invalid was refused"; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q, want it to hold %q", err, want)
	}
}

// TestRouteLog: the standard log's messages come out one escaped line
// each (a newline in one escaped too), after "stowage: " and the label of the library writing them.
func TestRouteLog(t *testing.T) {
	var buf bytes.Buffer
	t.Cleanup(func() { log.SetOutput(os.Stderr); logLabel.Store(nil) })
	RouteLog(&buf)
	log.Printf("plain")
	SetLogLabel("helm")
	log.Printf("values: \x1b[31mred\nsecond")
	want := "stowage: plain\nstowage: helm: values: \\x1b[31mred\\nsecond\n"
	if got := buf.String(); got != want {
		t.Errorf("log output\n%q\nwant\n%q", got, want)
	}
}
