package creds

// Rule is which password sources a run may read and how: the one choice
// between the CLI's rule (Read, Check: the operator's rule alone) and the
// KRM function's (ReadFunction, CheckFunction: the operator's rule
// narrowed by the exec declaration's --allow-env names), made once for a
// source and used by every read of it.
type Rule struct {
	// Dir is the directory "file:" sources are relative to.
	Dir string
	// Function selects the KRM function's rule, for the function and for
	// a kustomization the CLI reads; AllowEnv are then the exec
	// declaration's --allow-env names (nil when it gives none).
	Function bool
	AllowEnv []string
}

// declared are the names that narrow the operator's rule: AllowEnv under
// the function's rule, none under the CLI's.
func (r Rule) declared() []string {
	if r.Function {
		return r.AllowEnv
	}
	return nil
}

// Read reads sources under the rule: ReadFunction or Read.
func (r Rule) Read(sources []Source, getenv Env) (map[string][]byte, error) {
	if r.Function {
		return ReadFunction(r.Dir, sources, getenv, r.AllowEnv)
	}
	return Read(r.Dir, sources, getenv)
}

// Check refuses what Read would refuse without reading a password file's
// content: CheckFunction or Check.
func (r Rule) Check(sources []Source, getenv Env) error {
	if r.Function {
		return CheckFunction(r.Dir, sources, getenv, r.AllowEnv)
	}
	return Check(r.Dir, sources, getenv)
}

// Allowed refuses every env: source the rule does not let stowage read
// (Allowed with the declared names), before anything is read.
func (r Rule) Allowed(sources []Source, getenv Env) error {
	return Allowed(sources, getenv, r.declared())
}

// Passwords refuses the sources the rule does not allow (Allowed), before
// anything is read, and returns the reader a registry client calls for
// one source's password when a request needs it: that source read under
// the rule (Read), its errors naming the images of sources that use it.
func (r Rule) Passwords(sources []Source, getenv Env) (func(source string) ([]byte, error), error) {
	if err := r.Allowed(sources, getenv); err != nil {
		return nil, err
	}
	users := map[string][]string{}
	for _, s := range sources {
		users[s.Source] = s.UsedBy
	}
	return func(source string) ([]byte, error) {
		got, err := r.Read([]Source{{Source: source, UsedBy: users[source]}}, getenv)
		if err != nil {
			return nil, err
		}
		return got[source], nil
	}, nil
}
