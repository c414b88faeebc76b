package schema

import (
	"strings"
	"testing"
)

// TestAuthValueNeverShown: a password written where the auth struct goes
// (auth: "hunter2", auth: [user, "hunter2"]) or in the wrong shape inside
// it is refused at its field without quoting it. (Found by cmd/stowage's
// TestSecretHygiene.)
func TestAuthValueNeverShown(t *testing.T) {
	const secret = "hunter2-canary"
	for _, auth := range []string{
		`"` + secret + `"`,
		`[robot, "` + secret + `"]`,
		`{username: robot, password: {value: "` + secret + `"}}`,
		`{username: robot, password: ["` + secret + `"]}`,
	} {
		for _, where := range []string{"environments:\n  app:\n    image: busybox:1\n", "images:\n  app:\n    reference: busybox:1\n"} {
			yaml := where + "    auth: " + auth + "\nprofiles: {p: {pullers: [{name: pre, namespace: ns}]}}\n"
			_, err := LoadFiles("config", []File{{Name: "config/c.yaml", Data: []byte(yaml)}}, Options{AllowLiteralPasswords: true})
			if err == nil {
				t.Fatalf("auth: %s accepted", auth)
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("auth: %s: the error shows the value:\n%v", auth, err)
			}
			if !strings.Contains(err.Error(), ".app.auth") || !strings.Contains(err.Error(), "not shown") {
				t.Errorf("auth: %s: want an error at the auth field saying the value is not shown:\n%v", auth, err)
			}
		}
	}
}
