package v1alpha1

import (
	"fmt"
	"io"
	"strings"

	"github.com/stowage/stowage/internal/escape"
	"github.com/stowage/stowage/internal/words"
)

// KubeletRule is the kubelet's rule for using a pre-pulled image offline,
// in the words vet and status print.
const KubeletRule = "the kubelet's KubeletEnsureSecretPulledImages (KEP-2535; beta, on by default since Kubernetes 1.35, " +
	"policy NeverVerifyPreloadedImages): an image it pulled with credentials is reused without the registry only by pods " +
	"presenting credentials of the same hash (any Secret name, any namespace); one pulled without credentials, or not " +
	"pulled by the kubelet (preloaded), by any pod; under the AlwaysVerify policy every pod needs the registry"

// ReportError is one problem in a report (vet, lock, render --check):
// where the loader located it, when it did, and the message stderr
// prints for it.
type ReportError struct {
	// File is the file holding the problem, as stowage names it from
	// where it runs; empty when unknown.
	File string `json:"file,omitempty"`
	// Line and Column are 1-based; 0 (absent) when unknown.
	Line   int `json:"line,omitempty"`
	Column int `json:"column,omitempty"`
	// Field is the path of the field from the document root
	// ("profiles.lab.pullers[0].namespace"); empty when unknown.
	Field string `json:"field,omitempty"`
	// Message is the problem as stderr says it.
	Message string `json:"message"`
}

// VetReport is what `stowage vet -o json|yaml` prints, on stdout also
// when vet fails: the verdict, what was checked, the Secrets the user must
// create, who may use each pre-pulled image offline, and every error with
// its place. Lists are present, empty when there is nothing to list.
type VetReport struct {
	// OK is true when vet passed.
	OK bool `json:"ok"`
	// Profiles are the profiles vetted, in the config's order.
	Profiles []string `json:"profiles"`
	// Objects is the number of objects the profiles render (for a
	// kustomization: that the function adds).
	Objects int `json:"objects"`
	// PinnedDigests is the number of digests --remote found, on failure
	// too (those it did not find are errors); absent without --remote.
	PinnedDigests *int `json:"pinnedDigests,omitempty"`
	// Site is the site check (--site); absent without --site.
	Site *VetSiteReport `json:"site,omitempty"`
	// ExternalSecrets are the pull Secrets the DaemonSets name but
	// stowage does not render: the user creates each.
	ExternalSecrets []VetSecret `json:"externalSecrets"`
	// Images say, per profile and pre-pulled image, who may use the copy
	// on a node offline.
	Images []VetImage `json:"images"`
	// Unpinned are the strings of a kustomization's items that read as
	// image references and that nothing pins: the site would pull them by
	// tag. Each is a warning on stderr too.
	Unpinned []VetUnpinned `json:"unpinned"`
	// Errors are the problems that failed vet, each with its place.
	Errors []ReportError `json:"errors"`
	// DiskBudget is each vetted profile's node pools with the bytes their
	// images take on a node, against the pool's declared nodeDisk
	// (internal/diskbudget); every pool, those that fit too.
	DiskBudget []DiskPool `json:"diskBudget"`

	// Workloads is the number of workload images a kustomization's
	// function pins; text output only.
	Workloads int `json:"-"`
	// Verbose asks the text output for the Secrets to create and the
	// offline use of every image (vet -v); text output only.
	Verbose bool `json:"-"`
}

// NewVetReport is the report of a vet run before anything is known:
// every list present and empty.
func NewVetReport() *VetReport {
	return &VetReport{Profiles: []string{}, ExternalSecrets: []VetSecret{}, Images: []VetImage{}, Unpinned: []VetUnpinned{}, Errors: []ReportError{}, DiskBudget: []DiskPool{}}
}

// WriteText writes vet's verdict on success: one line per profile
// ("ok: profile lab: 3 images pre-pulled, 1 pull Secret to create"), then
// one line for what was checked across profiles, when anything was (the
// workloads a kustomization pins, --remote, --site, strings left
// unpinned). With Verbose, the Secrets to create and who may use each
// pre-pulled image offline follow.
func (r *VetReport) WriteText(w io.Writer) error {
	var b strings.Builder
	for _, p := range r.Profiles {
		images, secrets := 0, 0
		for _, im := range r.Images {
			if im.Profile == p {
				images++
			}
		}
		for _, s := range r.ExternalSecrets {
			if s.Profile == p {
				secrets++
			}
		}
		fmt.Fprintf(&b, "ok: profile %s: %s pre-pulled", escape.Line(p), words.Count(images, "image"))
		if secrets > 0 {
			fmt.Fprintf(&b, ", %s to create", words.Count(secrets, "pull Secret"))
		}
		b.WriteString("\n")
	}
	var checked []string
	if len(r.Profiles) == 0 || r.Workloads > 0 {
		checked = append(checked, words.Count(r.Workloads, "workload image")+" pinned")
	}
	if n := len(r.Unpinned); n > 0 {
		checked = append(checked, words.CountAs(n, "string read as an image reference", "strings read as image references")+" left unpinned (warnings above)")
	}
	if r.PinnedDigests != nil {
		checked = append(checked, words.CountAs(*r.PinnedDigests, "pinned digest exists in its registry", "pinned digests exist in their registries"))
	}
	if r.Site != nil {
		checked = append(checked, fmt.Sprintf("%s on the site registry", words.Count(r.Site.Manifests, "manifest")))
	}
	if len(checked) > 0 {
		fmt.Fprintf(&b, "ok: %s\n", strings.Join(checked, ", "))
	}
	if r.Verbose {
		r.writeDetails(&b)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeDetails writes the pull Secrets to create and who may use each
// pre-pulled image offline, under the kubelet's rule.
func (r *VetReport) writeDetails(b *strings.Builder) {
	if len(r.ExternalSecrets) > 0 {
		b.WriteString("stowage names these pull Secrets but does not render them; create each, a kubernetes.io/dockerconfigjson Secret with the registry's credentials, in every namespace listed (tenants' pods must present the same credentials to the kubelet):\n")
		for _, e := range r.ExternalSecrets {
			fmt.Fprintf(b, "  %s\n", escape.Line(fmt.Sprintf("profile %s: Secret %s (%s; %s) in %s", e.Profile, e.Name, e.Registry,
				strings.Join(e.UsedBy, ", "), strings.Join(e.Namespaces, ", "))))
		}
	}
	if len(r.Images) > 0 {
		fmt.Fprintf(b, "offline use of the pre-pulled images (%s):\n", KubeletRule)
		for _, im := range r.Images {
			fmt.Fprintf(b, "  profile %s: %s: %s\n", escape.Line(im.Profile), escape.Line(im.Reference), escape.Line(im.OfflineUse.Summary))
		}
	}
}

// VetSiteReport is the site check of vet (vet --site): the site
// registries checked, how many manifests, and each one the site lacks or
// that could not be checked.
type VetSiteReport struct {
	// Registries are the default prefixes of the site registries
	// checked, sorted.
	Registries []string `json:"registries"`
	// Manifests is the number of manifests checked: every pinned digest
	// the rendered output names and every child of a pinned index.
	Manifests int `json:"manifests"`
	// Missing are the manifests not found, sorted by reference.
	Missing []VetSiteMissing `json:"missing"`
}

// VetSiteMissing is one manifest the site did not serve.
type VetSiteMissing struct {
	// Reference is the pinned site reference the rendered output names.
	Reference string `json:"reference"`
	// Digest is the manifest asked for: the pin, or an index child.
	Digest string `json:"digest"`
	// Platform is the index child's platform; absent for the pin.
	Platform string `json:"platform,omitempty"`
	// Image is the lock key.
	Image string `json:"image"`
	// UsedBy says what in the config uses the image.
	UsedBy string `json:"usedBy"`
	// NotFound is set when the registry answered 404; unset when it
	// could not be asked or answered otherwise (Message says).
	NotFound bool `json:"notFound"`
	// Message is the registry's answer as stderr words it.
	Message string `json:"message"`
}

// VetUnpinned is one string of a kustomization's item left reading as an
// image reference without a digest.
type VetUnpinned struct {
	// Object is "Kind name".
	Object string `json:"object"`
	// Field is the path of the string in the object.
	Field string `json:"field"`
	// Reference is the string.
	Reference string `json:"reference"`
}

// VetSecret is a pull Secret stowage names but does not render.
type VetSecret struct {
	// Profile is the profile whose DaemonSets name it.
	Profile string `json:"profile"`
	// Name is the Secret's name.
	Name string `json:"name"`
	// Registry is the docker config key it must hold credentials for.
	Registry string `json:"registry"`
	// UsedBy names the images (and their uses) pulled with it.
	UsedBy []string `json:"usedBy"`
	// Namespaces are where it must exist.
	Namespaces []string `json:"namespaces"`
}

// VetImage is one pre-pulled image of a profile and who may use it
// offline.
type VetImage struct {
	// Profile is the profile pre-pulling the image.
	Profile string `json:"profile"`
	// Reference is the pinned reference the DaemonSets name.
	Reference string `json:"reference"`
	// OfflineUse says which pods may use the copy on a node offline.
	OfflineUse ImageAccess `json:"offlineUse"`
}

// LockReport is what `stowage lock -o json|yaml` prints, on stdout also
// when lock fails: the verdict, the lock file, whether this run wrote it
// and how many entries it holds now, the entries that changed, the images
// that failed, for --check what is out of date, and every other error
// with its place. Every list is sorted (changes and stale by lock key,
// failures by lock key) and present, empty when there is nothing to list.
type LockReport struct {
	// OK is true when lock passed (with --check: the lock is current).
	OK bool `json:"ok"`
	// Lock is the lock file's path; empty when the config (which says
	// where the lock is) could not be read.
	Lock string `json:"lock"`
	// Written is true when this run replaced (or created) the file.
	Written bool `json:"written"`
	// Entries is the number of entries the file holds after the run.
	Entries int `json:"entries"`
	// Changes are the entries this run added, removed or changed, as in
	// bump -o json.
	Changes []BumpChange `json:"changes"`
	// Failures are the images that did not resolve, with the registry's
	// answer.
	Failures []LockFailure `json:"failures"`
	// Stale is what --check found out of date; always empty without
	// --check.
	Stale []StaleEntry `json:"stale"`
	// Errors are the failures that are not an image's (the config, the
	// lock file, the flags' files), located as vet's are.
	Errors []ReportError `json:"errors"`
}

// NewLockReport is the report of a lock run before anything is known:
// every list present and empty.
func NewLockReport() *LockReport {
	return &LockReport{Changes: []BumpChange{}, Failures: []LockFailure{}, Stale: []StaleEntry{}, Errors: []ReportError{}}
}

// LockFailure is one image lock could not resolve. Like every registry
// answer stowage words, it holds no credential.
type LockFailure struct {
	// Image is the reference as the config writes it.
	Image string `json:"image"`
	// Key is the lock key.
	Key string `json:"key"`
	// UsedBy says what in the config uses the image.
	UsedBy string `json:"usedBy,omitempty"`
	// Registry is the registry asked.
	Registry string `json:"registry,omitempty"`
	// Op is the request that failed ("resolve", "verify", …).
	Op string `json:"operation,omitempty"`
	// Message is the line lock prints on stderr for it.
	Message string `json:"message"`
}

// StaleEntry is one difference `stowage lock` would make to a lock file
// (lock --check).
type StaleEntry struct {
	// Status is "missing" (the config uses Key, the lock lacks it),
	// "unused" (the lock has Key, no profile uses it), "changed"
	// (Recorded is the spelling the lock recorded, Reference the one the
	// config writes now), "unverified" (a required verify policy of the
	// image does not trust the entry's signer, or it has none),
	// "unrecorded" (the entry's signer is recorded without its format) or
	// "format" (only the file's bytes differ; the other fields are empty).
	Status string `json:"status"`
	// Key is the lock key; empty for format.
	Key string `json:"key,omitempty"`
	// Reference is the reference as the config writes it.
	Reference string `json:"reference,omitempty"`
	// Recorded is the reference the entry records (changed).
	Recorded string `json:"recorded,omitempty"`
}

// String is the entry's line in lock --check's list.
func (s StaleEntry) String() string {
	switch s.Status {
	case "missing":
		return fmt.Sprintf("missing  %s (%s)", s.Key, s.Reference)
	case "unused":
		return fmt.Sprintf("unused   %s", s.Key)
	case "changed":
		return fmt.Sprintf("changed  %s (recorded as %s, written as %s)", s.Key, s.Recorded, s.Reference)
	case "unverified":
		return fmt.Sprintf("unverified %s (no signer its required verify policy trusts)", s.Key)
	case "unrecorded":
		return fmt.Sprintf("unrecorded %s (the lock does not say which format its signature is in; lock verifies it again to record it)", s.Key)
	default:
		return "format   the file is not in canonical form"
	}
}

// BumpReport is what `stowage bump -o json|yaml` prints: the pull
// request a lock update makes.
type BumpReport struct {
	// Changed is true when the lock changed.
	Changed bool `json:"changed"`
	// Title is the pull request's title.
	Title string `json:"title"`
	// Branch is a branch name derived from the change set: the same
	// change always gets the same branch.
	Branch string `json:"branch"`
	// Body is the pull request's body, markdown.
	Body string `json:"body"`
	// Changes lists each changed entry.
	Changes []BumpChange `json:"changes"`
	// Failures lists the images that did not resolve under --keep-going
	// (they keep their old entries); empty otherwise.
	Failures []BumpFailure `json:"failures"`
}

// WriteText writes the pull request's title, a blank line and its body.
func (r BumpReport) WriteText(w io.Writer) error {
	_, err := fmt.Fprintf(w, "%s\n\n%s", r.Title, r.Body)
	return err
}

// BumpFailure is one image of BumpReport.Failures.
type BumpFailure struct {
	// Key is the lock key.
	Key string `json:"key"`
	// Image is the reference as the config writes it.
	Image string `json:"image"`
	// Error is the registry's answer as stderr words it.
	Error string `json:"error"`
}

// BumpChange is one changed lock entry. Digests and kinds are empty on
// the side where the entry does not exist.
type BumpChange struct {
	// Key is the lock key.
	Key string `json:"key"`
	// Reference is the entry's reference.
	Reference string `json:"reference"`
	// OldDigest and NewDigest are the entry's digest before and after.
	OldDigest string `json:"oldDigest,omitempty"`
	NewDigest string `json:"newDigest,omitempty"`
	// OldKind and NewKind are the entry's kind (image, index, artifact)
	// before and after.
	OldKind string `json:"oldKind,omitempty"`
	NewKind string `json:"newKind,omitempty"`
	// Used are the references as the config writes them.
	Used []string `json:"usedAs"`
	// Pullers are the environments and pullers affected.
	Pullers []string `json:"pullers"`
	// OldSigner and NewSigner say each side's verifiedBy, set when that
	// side records one; SignerChanged is true when the signer moved.
	OldSigner     string `json:"oldSigner,omitempty"`
	NewSigner     string `json:"newSigner,omitempty"`
	SignerChanged bool   `json:"signerChanged,omitempty"`
}
