package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHaveNotALock: --have naming a file that is not a lock (a password
// file, a kubeconfig, /etc/shadow-like text) is refused naming the file,
// and no line of it appears in the message.
func TestHaveNotALock(t *testing.T) {
	t.Parallel()
	const secret = "hunter2-have-canary"
	for name, body := range map[string]string{
		"yaml":       "user: alice\npassword: " + secret + "\n",
		"shadow":     "root:$6$" + secret + ":19000:0:99999:7:::\n",
		"kubeconfig": "apiVersion: v1\nkind: Config\nusers:\n- name: u\n  user:\n    token: " + secret + "\n",
		"binary":     "\x00\x01" + secret + "\xff",
	} {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "site.lock.yaml")
			if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
				t.Fatal(err)
			}
			_, _, err := leaveOut(nil, p)
			if err == nil {
				t.Fatal("a file that is not a lock was taken as one")
			}
			if !strings.Contains(err.Error(), "--have") || !strings.Contains(err.Error(), p) {
				t.Errorf("the error does not name --have and the file: %v", err)
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("the error quotes the file: %v", err)
			}
		})
	}
}
