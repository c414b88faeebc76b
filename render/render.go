// Package render turns a validated config and its lock into the Kubernetes
// objects that pre-pull its images: per puller a DaemonSet per node group,
// a records ConfigMap and, per distinct credential, a pull Secret; the
// OpenPAI service and package cache ConfigMaps where a profile asks for
// them; and, where a profile's policy field asks, the site's admission
// policies (a Kyverno ClusterPolicy, policy-controller ClusterImagePolicies
// and TrustRoots, a CRI-O policy.json ConfigMap) for the references it
// writes.
//
// This package is stowage's one render pipeline: `stowage render`, `cmp
// generate`, `push`, `vet`, `status`, `bump --render` and the KRM function
// (fn) all render through Render. Rendering a config directory DIR from Go
// takes the steps `stowage render DIR` takes, and gives the same bytes
// (Example_directory):
//
//  1. schema.Load(DIR): the config. Load evaluates the config's CUE in
//     this process unless it is given schema.WithChild (with
//     schema.ServeChild in main), which evaluates it in a child process
//     the limits can kill, as the stowage binary does: use that for a
//     config you do not trust;
//  2. ReadLock(DIR/stowage.lock.yaml), or ParseLock of bytes read some
//     other way: the lock, checked as strictly as the CLI checks it;
//  3. ReadNeeded(DIR, cfg, profile, getenv): the password sources and the
//     verify policies' key and trusted-root files the profile needs,
//     read under the CLI's rules (the function's with FunctionRule, none
//     with Placeholders), for Input.Passwords and Input.Trust (Needs lists
//     them without reading, for a caller that reads them itself);
//  4. Render, then WriteStream or WriteDir.
//
// Render, Needs and ParseLock are pure: no file, network or environment
// access. ReadLock, ReadNeeded and WriteDir are the package's only I/O.
package render

import (
	"context"
	"errors"
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/internal/atomicfile"
	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/output"
	engine "github.com/stowage/stowage/internal/render"
)

// Input is everything Render needs.
type Input struct {
	// Config is a config as schema.Load returns it.
	Config *v1alpha1.Config
	// Lock supplies the digests: every image needs an entry unless its
	// reference carries a digest. nil is an empty lock.
	Lock *v1alpha1.ImageLock
	// Profile names the profile to render; "" picks the only one.
	Profile string
	// Passwords maps a password source as the config writes it
	// ("env:HARBOR_PASSWORD", "file:secrets/hub") to its bytes; needed
	// only for the Secrets a profile with secrets: render renders. The
	// sources are Needs' Passwords; ReadNeeded reads them as the CLI does.
	Passwords map[string][]byte
	// Trust maps the key and trusted-root files of the profile's verify
	// policies (paths as the config writes them) to their bytes; needed
	// only for the admission policies of a profile with a policy field.
	// The paths are Needs' Trust; ReadNeeded reads them as the CLI does.
	Trust map[string][]byte
}

// Object is one rendered Kubernetes object: a *corev1.Secret,
// *corev1.ConfigMap or *appsv1.DaemonSet, or an admission policy (a
// Kyverno ClusterPolicy, a policy-controller ClusterImagePolicy or
// TrustRoot) as an *unstructured.Unstructured.
type Object struct {
	Kind      string
	Namespace string
	Name      string
	Object    runtime.Object
}

// FileName is the object's file name in a WriteDir directory:
// <kind>-<namespace>-<name>.yaml, lower case; <kind>-<name>.yaml for a
// cluster-scoped object.
func (o Object) FileName() string {
	return engine.Object{Kind: o.Kind, Namespace: o.Namespace, Name: o.Name}.FileName()
}

// Render renders the profile of in.Config with the digests of in.Lock,
// sorted by kind (Secrets, ConfigMaps, DaemonSets), namespace and name. A
// lock entry that breaks the lock's rules (its name the normalised
// reference, digests sha256:<64 hex>, a known kind, platforms canonical)
// is an error naming it. Errors: an unknown profile, images the lock has
// no entry for (all of them, naming who uses each), a password source or
// trust file the profile needs (Needs) that Input lacks, and the rest
// naming the puller, environment or image; nothing is returned when any
// occurs.
func Render(in Input) ([]Object, error) {
	if in.Config == nil {
		return nil, errors.New("render: no config")
	}
	l, err := fromImageLock(in.Lock)
	if err != nil {
		return nil, err
	}
	objs, err := engine.Render(engine.Input{Config: in.Config, Profile: in.Profile, Lock: l, Passwords: in.Passwords, Trust: in.Trust})
	if err != nil {
		return nil, err
	}
	out := make([]Object, len(objs))
	for i, o := range objs {
		out[i] = Object(o)
	}
	return out, nil
}

// fromImageLock checks the entries of il and returns them as a lock.
func fromImageLock(il *v1alpha1.ImageLock) (*lock.Lock, error) {
	l := &lock.Lock{}
	if il == nil {
		return l, nil
	}
	if il.APIVersion != "" && il.APIVersion != v1alpha1.APIVersion || il.Kind != "" && il.Kind != v1alpha1.ImageLockKind {
		return nil, fmt.Errorf("render: the lock is a %s %s, want %s %s", il.APIVersion, il.Kind, v1alpha1.APIVersion, v1alpha1.ImageLockKind)
	}
	var errs []error
	var entries []lock.Entry
	seen := map[string]bool{}
	for i, e := range il.Spec.Images {
		if err := lock.Validate(e); err != nil {
			errs = append(errs, fmt.Errorf("lock spec.images[%d]: %w", i, err))
			continue
		}
		if seen[e.Name] {
			errs = append(errs, fmt.Errorf("lock spec.images[%d]: duplicate name %s", i, e.Name))
			continue
		}
		seen[e.Name] = true
		entries = append(entries, e)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	// Sorted once: Put entry by entry is quadratic in an unsorted lock.
	return lock.New(entries), nil
}

// WriteStream writes objs to w as one multi-document YAML stream, "---"
// before each document after the first: the bytes `stowage render` prints.
// Keys are sorted and a null creationTimestamp and an empty status left
// out, so the same objects always give the same bytes.
func WriteStream(w io.Writer, objs []Object) error {
	b, err := engine.Encode(engine.Objects(objs))
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// WriteDir replaces the directory dir with one file per object
// (Object.FileName) and a kustomization.yaml listing them, ready for a
// Flux Kustomization or an Argo CD Application: the files of `stowage
// render -o DIR`. dir may be missing, empty or an earlier WriteDir's; one
// holding anything else is refused, since it is replaced whole. The new
// content is written beside dir and swapped in, so a failure or a
// cancelled ctx leaves dir as it was. A Secret's file gets mode 0600, the
// others 0644 (whatever the umask), and dir 0755.
func WriteDir(ctx context.Context, dir string, objs []Object) error {
	files, err := engine.Files(engine.Objects(objs))
	if err != nil {
		return err
	}
	if err := output.CheckDir(dir, ""); err != nil {
		return err
	}
	return atomicfile.ReplaceDirModes(ctx, dir, files, engine.FileModes(engine.Objects(objs)))
}
