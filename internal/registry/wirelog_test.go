package registry

import (
	"net/url"
	"testing"
)

func TestLogURLRedacts(t *testing.T) {
	tests := []struct{ in, want string }{
		{"https://r.example/v2/team/app/manifests/1.0", "https://r.example/v2/team/app/manifests/1.0"},
		{"https://auth.example/token?service=r.example&scope=repository:team/app:pull", "https://auth.example/token?scope=repository%3Ateam%2Fapp%3Apull&service=r.example"},
		{"https://alice:hunter2@r.example/v2/", "https://REDACTED@r.example/v2/"},
		{"https://s3.example/blob?X-Amz-Signature=abc123&X-Amz-Credential=AKIA9&digest=sha256:00", "https://s3.example/blob?X-Amz-Credential=REDACTED&X-Amz-Signature=REDACTED&digest=sha256%3A00"},
	}
	for _, tc := range tests {
		u, err := url.Parse(tc.in)
		if err != nil {
			t.Fatal(err)
		}
		if got := logURL(u); got != tc.want {
			t.Errorf("logURL(%s) = %s, want %s", tc.in, got, tc.want)
		}
	}
}
