package creds

import (
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stowage/stowage/api/v1alpha1"
)

func TestRead(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "hub"), []byte("file-pass\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "crlf"), []byte("crlf-pass\r\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"HARBOR": "env-pass", "EMPTY": "", AllowVariable: "HARBOR"}
	getenv := func(k string) (string, bool) { v, ok := env[k]; return v, ok }

	got, err := Read(dir, []Source{
		{Source: "env:HARBOR"}, {Source: "file:hub"}, {Source: "file:crlf"}, {Source: "literal-allowed"},
	}, getenv)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"env:HARBOR": "env-pass", "file:hub": "file-pass", "file:crlf": "crlf-pass", "literal-allowed": "literal-allowed"}
	for k, v := range want {
		if string(got[k]) != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
}

// TestReadErrors: every failing source is reported at once, naming the
// variable or file and what needs it, never a value.
func TestReadErrors(t *testing.T) {
	t.Parallel()
	env := map[string]string{"EMPTY": "", "SET": "canary-value-123", AllowVariable: "EMPTY,SET,NOT_SET_ANYWHERE"}
	getenv := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	_, err := Read(t.TempDir(), []Source{
		{Source: "env:NOT_SET_ANYWHERE", UsedBy: []string{`environment "jupyter-gpu"`}},
		{Source: "env:EMPTY", UsedBy: []string{`image "x"`}},
		{Source: "file:missing/password", UsedBy: []string{`environment "hub"`}},
		{Source: "env:SET"},
	}, getenv)
	if err == nil {
		t.Fatal("Read succeeded with missing sources")
	}
	msg := err.Error()
	for _, want := range []string{
		`environment variable NOT_SET_ANYWHERE is not set (needed by environment "jupyter-gpu")`,
		`environment variable EMPTY is empty (needed by image "x")`,
		"missing/password cannot be read (needed by environment \"hub\")",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("error does not say %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "canary-value-123") {
		t.Errorf("error shows a password value:\n%s", msg)
	}
}

// TestReadStaysInDir: a file source must name a file inside the config
// directory; absolute paths and ".." are refused without being read.
func TestReadStaysInDir(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, src := range []string{"file:/etc/hostname", "file:../outside", "file:a/../../outside"} {
		_, err := Read(dir, []Source{{Source: src, UsedBy: []string{"x"}}}, nil)
		if err == nil || !strings.Contains(err.Error(), "outside the config directory") {
			t.Errorf("%s: err = %v, want a refusal", src, err)
		}
	}
}

// TestReadOneRule: env: and file: values are trimmed by the same rule (one
// trailing "\n" or "\r\n"), and an empty value is refused from both.
func TestReadOneRule(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	values := map[string]string{"lf": "pw\n", "crlf": "pw\r\n", "two": "pw\n\n", "space": " pw ", "empty": "", "nl": "\n"}
	for n, v := range values {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(v), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	getenv := func(k string) (string, bool) {
		if k == AllowVariable {
			return "lf crlf two space empty nl", true
		}
		v, ok := values[k]
		return v, ok
	}
	want := map[string]string{"lf": "pw", "crlf": "pw", "two": "pw\n", "space": " pw "}
	for n, w := range want {
		got, err := Read(dir, []Source{{Source: "env:" + n}, {Source: "file:" + n}}, getenv)
		if err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		if string(got["env:"+n]) != w || string(got["file:"+n]) != w {
			t.Errorf("%s: env %q, file %q, want %q from both", n, got["env:"+n], got["file:"+n], w)
		}
	}
	for _, n := range []string{"empty", "nl"} {
		_, err := Read(dir, []Source{{Source: "env:" + n, UsedBy: []string{"a"}}, {Source: "file:" + n, UsedBy: []string{"b"}}}, getenv)
		if err == nil {
			t.Fatalf("%s: accepted", n)
		}
		for _, w := range []string{"environment variable " + n + " is empty (needed by a)", "password file " + filepath.Join(dir, n) + " is empty (needed by b)"} {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q does not say %q", n, err, w)
			}
		}
	}
}

// TestReadRefusesLinksOut: a file: source that is a symbolic link out of
// the directory (to a canary file, to /proc/self/environ) or a FIFO or
// device is refused without being read, and the error quotes nothing.
func TestReadRefusesLinksOut(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	dir := filepath.Join(root, "cfg")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	const canary = "CANARY-outside-file-77"
	if err := os.WriteFile(filepath.Join(root, "shadow"), []byte(canary), 0o600); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{"pw": "../shadow", "environ": "/proc/self/environ", "zero": "/dev/zero"} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	if err := mkfifo(filepath.Join(dir, "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	for src, want := range map[string]string{
		"file:pw":      "leads outside the directory " + dir,
		"file:environ": "leads outside the directory " + dir,
		"file:zero":    "leads outside the directory " + dir,
		"file:fifo":    "is not a regular file (a FIFO)",
	} {
		got, err := Read(dir, []Source{{Source: src, UsedBy: []string{"env x"}}}, nil)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "(needed by env x)") {
			t.Errorf("%s: got %q, %v; want an error saying %q", src, got, err, want)
			continue
		}
		if strings.Contains(err.Error(), canary) {
			t.Errorf("%s: error quotes the file: %v", src, err)
		}
	}
}

// recordingEnv is an environment that records which variables are read
// (AllowVariable aside, which the rule itself reads).
func recordingEnv(vars map[string]string) (Env, map[string]bool) {
	read := map[string]bool{}
	return func(k string) (string, bool) {
		if k != AllowVariable {
			read[k] = true
		}
		v, ok := vars[k]
		return v, ok
	}, read
}

// TestOperatorRule: env: reads STOWAGE_* variables and those the operator
// names in STOWAGE_ALLOW_ENV, for a config directory (Read, Check) and for
// the function (ReadFunction, CheckFunction) alike; the exec declaration's
// --allow-env only narrows the operator's names and never widens them
// (the CI_JOB_TOKEN attack); a refused variable is never read, and no
// refusal tells the repository how to widen the rule. Rule, which
// chooses between them, gives the same results.
func TestOperatorRule(t *testing.T) {
	t.Parallel()
	const needed = `image "r.example/a:1"`
	outside := "environment variable CI_JOB_TOKEN may not be read (needed by " + needed + "): stowage reads only variables starting with STOWAGE_ and those the operator names in STOWAGE_ALLOW_ENV (set in the CI job's or the repository server's environment, never by the repository)"
	narrowed := "environment variable CI_JOB_TOKEN may not be read (needed by " + needed + "): the exec declaration's --allow-env narrows STOWAGE_ALLOW_ENV and does not list it"
	vars := map[string]string{"STOWAGE_HUB": "v-hub", "CI_JOB_TOKEN": "v-token", "HARBOR": "v-harbor"}
	sources := []Source{{Source: "env:CI_JOB_TOKEN", UsedBy: []string{needed}}, {Source: "env:HARBOR", UsedBy: []string{needed}}, {Source: "env:STOWAGE_HUB"}}
	cases := []struct {
		name     string
		operator string   // STOWAGE_ALLOW_ENV; "-" for unset
		function bool     // ReadFunction rather than Read
		declared []string // the exec declaration's --allow-env
		want     string   // the error; "" reads all three
	}{
		{"config directory, no operator list", "-", false, nil, outside + "\n" + strings.Replace(outside, "CI_JOB_TOKEN", "HARBOR", 1)},
		{"config directory, operator allows", "CI_JOB_TOKEN, HARBOR", false, nil, ""},
		{"config directory, operator allows one", "HARBOR", false, nil, outside},
		{"function, the declaration cannot widen", "", true, []string{"CI_JOB_TOKEN", "HARBOR"}, outside + "\n" + strings.Replace(outside, "CI_JOB_TOKEN", "HARBOR", 1)},
		{"function, operator allows, nothing declared", "CI_JOB_TOKEN,HARBOR", true, nil, ""},
		{"function, the declaration narrows", "CI_JOB_TOKEN HARBOR", true, []string{"HARBOR"}, narrowed},
		{"function, the declaration narrows to nothing", "CI_JOB_TOKEN\tHARBOR", true, []string{""}, narrowed + "\n" + strings.Replace(narrowed, "CI_JOB_TOKEN", "HARBOR", 1)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := maps.Clone(vars)
			if tc.operator != "-" {
				env[AllowVariable] = tc.operator
			}
			for _, check := range []bool{false, true} {
				getenv, read := recordingEnv(env)
				var (
					got map[string][]byte
					err error
				)
				switch {
				case tc.function && check:
					err = CheckFunction("", sources, getenv, tc.declared)
				case tc.function:
					got, err = ReadFunction("", sources, getenv, tc.declared)
				case check:
					err = Check("", sources, getenv)
				default:
					got, err = Read("", sources, getenv)
				}
				// Rule chooses the same function.
				rule, rerr := Rule{Function: tc.function, AllowEnv: tc.declared}, error(nil)
				if check {
					rerr = rule.Check(sources, getenv)
				} else {
					_, rerr = rule.Read(sources, getenv)
				}
				if (rerr == nil) != (err == nil) || (err != nil && rerr.Error() != err.Error()) {
					t.Errorf("check %v: Rule %+v: %v, want %v", check, rule, rerr, err)
				}
				if tc.want != "" {
					if err == nil || err.Error() != tc.want {
						t.Errorf("check %v: got %v\nwant %s", check, err, tc.want)
					}
					if len(read) != 0 {
						t.Errorf("check %v: read %v, want nothing read", check, read)
					}
					if err != nil && strings.Contains(err.Error(), "add --allow-env") {
						t.Errorf("check %v: the refusal tells the repository how to widen the rule: %v", check, err)
					}
					continue
				}
				if err != nil {
					t.Fatalf("check %v: %v", check, err)
				}
				if !check && (string(got["env:CI_JOB_TOKEN"]) != "v-token" || string(got["env:HARBOR"]) != "v-harbor" || string(got["env:STOWAGE_HUB"]) != "v-hub") {
					t.Errorf("read %q", got)
				}
			}
		})
	}
}

// TestOperatorNames: STOWAGE_ALLOW_ENV lists names separated by commas or
// white space; one that is not a variable name is refused by name.
func TestOperatorNames(t *testing.T) {
	t.Parallel()
	got, err := OperatorNames(func(string) (string, bool) { return " B,A ,, B\nC_1 ", true })
	if err != nil || !slices.Equal(got, []string{"A", "B", "C_1"}) {
		t.Errorf("got %q, %v", got, err)
	}
	_, err = OperatorNames(func(string) (string, bool) { return "A,1B", true })
	if want := `STOWAGE_ALLOW_ENV: "1B" is not an environment variable name (want letters, digits and _, not starting with a digit)`; err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
}

// TestCheckFunctionEnv: CheckFunction checks the allowed variables as
// Check does (an unset one is refused).
func TestCheckFunctionEnv(t *testing.T) {
	t.Parallel()
	getenv := func(k string) (string, bool) { return "v", k != "STOWAGE_UNSET" && k != AllowVariable }
	err := CheckFunction("", []Source{{Source: "env:STOWAGE_UNSET", UsedBy: []string{"x"}}}, getenv, nil)
	if want := "environment variable STOWAGE_UNSET is not set (needed by x)"; err == nil || err.Error() != want {
		t.Errorf("unset: got %v, want %s", err, want)
	}
}

// TestCheckRefusesWhatReadRefuses: Check gives, for each bad source, the
// same error as Read (unset and empty variables, a file linked out of the
// directory, a missing file, a FIFO, an empty file, a path with ".."), and
// passes the good ones; no error shows a file's content.
func TestCheckRefusesWhatReadRefuses(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	dir := filepath.Join(root, "cfg")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(root, "secret")
	for p, b := range map[string]string{outside: "out\n", filepath.Join(dir, "pw"): "pw\n", filepath.Join(dir, "empty"): ""} {
		if err := os.WriteFile(p, []byte(b), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(outside, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := mkfifo(filepath.Join(dir, "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"SET": "v", "EMPTY": "", AllowVariable: "SET,EMPTY,UNSET"}
	getenv := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	good := []Source{{Source: "env:SET"}, {Source: "file:pw"}, {Source: "literal"}}
	if err := Check(dir, good, getenv); err != nil {
		t.Errorf("Check good sources: %v", err)
	}
	for _, src := range []string{"env:UNSET", "env:EMPTY", "file:link", "file:missing", "file:fifo", "file:empty", "file:../secret"} {
		s := []Source{{Source: src, UsedBy: []string{`environment "e"`}}}
		cerr := Check(dir, s, getenv)
		_, rerr := Read(dir, s, getenv)
		if cerr == nil || rerr == nil {
			t.Errorf("%s: Check %v, Read %v; want both to refuse", src, cerr, rerr)
			continue
		}
		if cerr.Error() != rerr.Error() {
			t.Errorf("%s: Check says %q, Read %q", src, cerr, rerr)
		}
		if strings.Contains(cerr.Error(), "out\n") {
			t.Errorf("%s: error shows content: %v", src, cerr)
		}
	}
}

// TestReadLocated: each problem is led by the first place the source is
// written.
func TestReadLocated(t *testing.T) {
	t.Parallel()
	getenv := func(k string) (string, bool) { return "UNSET", k == AllowVariable }
	_, err := Read(t.TempDir(), []Source{{Source: "env:UNSET", UsedBy: []string{`environment "e"`},
		At: []v1alpha1.Position{{File: "config.yaml", Line: 6, Column: 7, Path: "environments.e.auth.password"}, {File: "config.yaml", Line: 9, Column: 7, Path: "images.i.auth.password"}}}}, getenv)
	want := `config.yaml:6:7: environments.e.auth.password: environment variable UNSET is not set (needed by environment "e")`
	if err == nil || err.Error() != want {
		t.Errorf("err = %v, want %q", err, want)
	}
	// The place is also a value: reports locate the problem without
	// reading the message.
	var ps Problems
	if !errors.As(err, &ps) || len(ps) != 1 || ps[0].At.Line != 6 || ps[0].At.Path != "environments.e.auth.password" ||
		ps[0].Msg != `environment variable UNSET is not set (needed by environment "e")` {
		t.Errorf("problems = %#v", ps)
	}
}

// TestRulePasswords: a source the operator's rule does not allow is
// refused before anything is read; an allowed one is read only when
// asked, and a failure names the images that use it.
func TestRulePasswords(t *testing.T) {
	t.Parallel()
	env := map[string]string{"STOWAGE_HARBOR": "env-pass"}
	getenv := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	r := Rule{Dir: t.TempDir()}
	if _, err := r.Passwords([]Source{{Source: "env:HOME", UsedBy: []string{"app:1"}}}, getenv); err == nil || !strings.Contains(err.Error(), "HOME") {
		t.Errorf("env:HOME not refused by name: %v", err)
	}
	read, err := r.Passwords([]Source{{Source: "env:STOWAGE_HARBOR"}, {Source: "file:missing", UsedBy: []string{"harbor/app:1"}}}, getenv)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := read("env:STOWAGE_HARBOR"); err != nil || string(got) != "env-pass" {
		t.Errorf("env:STOWAGE_HARBOR = %q, %v; want env-pass", got, err)
	}
	if _, err := read("file:missing"); err == nil || !strings.Contains(err.Error(), "harbor/app:1") {
		t.Errorf("file:missing: %v, want an error naming harbor/app:1", err)
	}
}
