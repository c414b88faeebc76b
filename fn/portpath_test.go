package fn

import "testing"

// TestPortAsPath: a registry host followed by a path component of digits
// is a warning that names host:port; every other reference is not.
func TestPortAsPath(t *testing.T) {
	for ref, want := range map[string]string{
		"xxx.harbor.com/5000/apache/submarine:jupyter-notebook-gpu-0.7.0":                            `image "xxx.harbor.com/5000/apache/submarine:jupyter-notebook-gpu-0.7.0": "5000" is read as the first part of the repository path on registry xxx.harbor.com; if 5000 is the registry's port, write xxx.harbor.com:5000/apache/submarine:jupyter-notebook-gpu-0.7.0`,
		"localhost/5000/app@sha256:9f51fd24680b17a25fe41e8571f2aa7168caf87b63b8afa69fdd928e9282aac8": `image "localhost/5000/app@sha256:9f51fd24680b17a25fe41e8571f2aa7168caf87b63b8afa69fdd928e9282aac8": "5000" is read as the first part of the repository path on registry localhost; if 5000 is the registry's port, write localhost:5000/app@sha256:9f51fd24680b17a25fe41e8571f2aa7168caf87b63b8afa69fdd928e9282aac8`,
		"xxx.harbor.com:5000/apache/submarine:1":                                                     "",
		"apache/submarine:jupyter-notebook-0.7.0":                                                    "",
		"5000/apache/submarine:1":                                                                    "",
		"xxx.harbor.com/5000:1":                                                                      "",
		"xxx.harbor.com/team5000/app:1":                                                              "",
		"Not A Reference":                                                                            "",
	} {
		if got := portAsPath(ref); got != want {
			t.Errorf("portAsPath(%q) = %q, want %q", ref, got, want)
		}
	}
}
