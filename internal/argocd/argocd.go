// Package argocd holds what stowage's Argo CD Config Management Plugin
// (stowage cmp) takes from the repo server's environment: the
// Application's plugin env and the checkout its source path lies in.
package argocd

import (
	"path/filepath"
	"strings"
)

// ProfileEnv is the variable an Application's spec.source.plugin.env entry
// PROFILE arrives as in the plugin's commands: Argo CD prefixes every
// plugin env name with ARGOCD_ENV_ (Argo CD's config management plugin
// documentation).
const ProfileEnv = "ARGOCD_ENV_PROFILE"

// SourcePathEnv is the Application's spec.source.path, which the repo
// server passes to every plugin command.
const SourcePathEnv = "ARGOCD_APP_SOURCE_PATH"

// CheckoutRoot is the repository checkout dir lies in, by the source path
// sp ($ARGOCD_APP_SOURCE_PATH): dir (absolute, links resolved) without sp
// at its end. It is "" (meaning dir itself) when sp is empty, not a local
// path, or not dir's end, or dir cannot be resolved.
func CheckoutRoot(dir, sp string) string {
	if sp == "" || !filepath.IsLocal(sp) {
		return ""
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return ""
	}
	if abs, err = filepath.EvalSymlinks(abs); err != nil {
		return ""
	}
	sp = filepath.Clean(sp)
	if sp == "." {
		return abs
	}
	sep := string(filepath.Separator)
	if !strings.HasSuffix(abs, sep+sp) {
		return ""
	}
	return strings.TrimSuffix(abs, sep+sp)
}
