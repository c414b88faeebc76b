// Package kubecheck is a test oracle for the objects stowage renders: apps/v1
// DaemonSet, v1 ConfigMap and v1 Secret of type kubernetes.io/dockerconfigjson,
// and the admission policies of a profile's policy field, custom resources
// of kinds kyverno.io/v1 ClusterPolicy, policy.sigstore.dev/v1beta1
// ClusterImagePolicy and policy.sigstore.dev/v1alpha1 TrustRoot (see
// custom.go: checked as the API server checks a custom resource against a
// minimal structural schema; the projects' own validation is the
// admissiontest module's). Tests use it beside the real API server of e2e/;
// no production code imports it (render's output is checked by tests, not
// at run time).
//
// A document is decoded strictly into its k8s.io/api type (unknown and
// duplicate fields are errors) and checked against the parts of the API
// server's create-time validation (k8s.io/kubernetes/pkg/apis/apps/validation
// ValidateDaemonSet, .../core/validation ValidateSecret and
// ValidateConfigMap) that cover the fields stowage renders, built from
// apimachinery's validators. Each rule's doc comment names the upstream
// function it follows. Validation happens before the API server's defaulting,
// so defaulted fields (imagePullPolicy, restartPolicy, updateStrategy.type)
// may be empty, and metadata.namespace may be empty for the applier to fill.
package kubecheck

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// Error is the error Check, CheckAll and CheckObject return for one object
// that fails: the object's identity and every problem found in it.
//
// Callers get at it with errors.As; CheckAll joins one *Error per failing
// document with errors.Join. Error also unwraps to each *field.Error in Errs,
// so errors.As(err, &fe) with fe a *field.Error finds the first problem.
type Error struct {
	// Doc is the 1-based position of the document among the non-empty
	// documents of a CheckAll stream; 0 for Check and CheckObject.
	Doc int

	// APIVersion and Kind are the object's type as written in the document
	// (or, for CheckObject, as implied by its Go type); empty if the document
	// could not be read far enough to tell.
	APIVersion, Kind string
	// Namespace and Name are the object's metadata.namespace and
	// metadata.name, either of which may be empty.
	Namespace, Name string

	// Errs lists the problems, each with its field path from the object's
	// root (e.g. spec.template.spec.initContainers[1].name). A problem that
	// has no field path, such as YAML that does not parse, has an empty
	// Field. Errs is sorted by field path.
	Errs field.ErrorList
}

// Error formats the object's identity followed by its problems, e.g.
//
//	document 2: DaemonSet kube-system/agent: spec.template.spec.containers[0].image: Required value
//
// Several problems are listed in brackets, comma-separated, the way
// field.ErrorList.ToAggregate formats them.
func (e *Error) Error() string {
	var b strings.Builder
	if e.Doc > 0 {
		fmt.Fprintf(&b, "document %d: ", e.Doc)
	}
	b.WriteString(e.object())
	b.WriteString(": ")

	seen := make(map[string]bool, len(e.Errs))
	var msgs []string
	for _, fe := range e.Errs {
		msg := fe.ErrorBody()
		if fe.Field != "" {
			msg = fe.Field + ": " + msg
		}
		if !seen[msg] {
			seen[msg] = true
			msgs = append(msgs, msg)
		}
	}
	switch len(msgs) {
	case 0:
		b.WriteString("invalid")
	case 1:
		b.WriteString(msgs[0])
	default:
		b.WriteString("[" + strings.Join(msgs, ", ") + "]")
	}
	return b.String()
}

// Unwrap returns each problem in Errs as a *field.Error, for errors.As.
func (e *Error) Unwrap() []error {
	errs := make([]error, len(e.Errs))
	for i, fe := range e.Errs {
		errs[i] = fe
	}
	return errs
}

// object names the object as "Kind namespace/name", falling back to
// "object" and "(no name)" for what the document does not say.
func (e *Error) object() string {
	kind := e.Kind
	if kind == "" {
		kind = "object"
	}
	switch {
	case e.Name == "" && e.Namespace == "":
		return kind + " (no name)"
	case e.Namespace == "":
		return kind + " " + e.Name
	default:
		return kind + " " + e.Namespace + "/" + e.Name
	}
}

// Check decodes one YAML or JSON document strictly into the k8s.io/api type
// named by its apiVersion and kind and validates the result.
//
// It returns nil if the object is valid, and otherwise an *Error listing every
// problem with its field path: YAML or JSON that does not parse, a missing or
// unsupported apiVersion/kind, unknown fields (named by path, e.g.
// spec.template.spec.containerz), duplicate fields (named by YAML line, since
// the YAML parser reports no path), values of the wrong JSON type, and the
// validation failures described in the package doc. Line numbers are relative
// to doc.
func Check(doc []byte) error {
	return check(doc, 0)
}

// CheckAll reads a multi-document YAML stream with apimachinery's
// YAMLReader (documents separated by "---" lines; a separator followed by
// anything but a comment is an error) and checks each document as Check does.
//
// Documents holding only whitespace and comments are skipped, as kubectl
// does; an empty stream is valid. It returns nil if every document is valid,
// and otherwise the *Error of each failing document joined with errors.Join,
// each naming its document number.
func CheckAll(stream []byte) error {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(stream)))
	var errs []error
	for n := 1; ; {
		doc, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			errs = append(errs, newError(n, identity{}, field.ErrorList{decodeError(err)}))
			break
		}
		if blank(doc) {
			continue
		}
		if err := check(doc, n); err != nil {
			errs = append(errs, err)
		}
		n++
	}
	return errors.Join(errs...)
}

// blank reports whether a document holds only whitespace, comments and the
// "---" line YAMLReader keeps at the start of a document.
func blank(doc []byte) bool {
	for line := range bytes.Lines(doc) {
		if t := bytes.TrimSpace(line); len(t) > 0 && t[0] != '#' && !bytes.HasPrefix(line, []byte("---")) {
			return false
		}
	}
	return true
}

// CheckObject validates an already-typed object: a *appsv1.DaemonSet,
// *corev1.Secret or *corev1.ConfigMap from k8s.io/api, or an
// *unstructured.Unstructured (the admission policies render writes, a
// ConfigMap among them), which is written as JSON and checked as Check
// checks a document.
//
// An empty TypeMeta is allowed (Go values built in code rarely set it), but a
// set apiVersion or kind must match the Go type. It returns nil if the object
// is valid, and otherwise an *Error as Check does; any other type, or a nil
// pointer, is reported as an unsupported kind.
func CheckObject(obj runtime.Object) error {
	if u, ok := obj.(*unstructured.Unstructured); ok && u != nil {
		doc, err := json.Marshal(u.Object)
		if err != nil {
			return newError(0, identity{apiVersion: u.GetAPIVersion(), kind: u.GetKind(), namespace: u.GetNamespace(), name: u.GetName()}, field.ErrorList{decodeError(err)})
		}
		return check(doc, 0)
	}
	k, ok := kindOfObject(obj)
	if !ok {
		return newError(0, typeIdentity(obj), field.ErrorList{unsupportedKind(typeIdentity(obj))})
	}
	id := identityOf(obj, k)
	var errs field.ErrorList
	gvk := obj.GetObjectKind().GroupVersionKind()
	if gvk.Kind != "" && gvk.Kind != k.gvk.Kind {
		errs = append(errs, field.Invalid(field.NewPath("kind"), gvk.Kind, fmt.Sprintf("must be %q for a %T", k.gvk.Kind, obj)))
	}
	if v := gvk.GroupVersion().String(); (gvk.Group != "" || gvk.Version != "") && v != k.gvk.GroupVersion().String() {
		errs = append(errs, field.Invalid(field.NewPath("apiVersion"), v, fmt.Sprintf("must be %q for a %T", k.gvk.GroupVersion().String(), obj)))
	}
	errs = append(errs, k.validate(obj)...)
	return newError(0, id, errs)
}

// identity is who an *Error is about.
type identity struct {
	apiVersion, kind, namespace, name string
}

// newError returns nil for an empty list and otherwise an *Error with errs
// sorted by field path (stable, so problems at one path keep their order).
func newError(doc int, id identity, errs field.ErrorList) error {
	if len(errs) == 0 {
		return nil
	}
	sort.SliceStable(errs, func(i, j int) bool { return errs[i].Field < errs[j].Field })
	return &Error{
		Doc:        doc,
		APIVersion: id.apiVersion,
		Kind:       id.kind,
		Namespace:  id.namespace,
		Name:       id.name,
		Errs:       errs,
	}
}
