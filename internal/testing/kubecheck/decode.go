package kubecheck

import (
	"fmt"
	"reflect"
	"strings"
	"sync"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"
)

// kindInfo is one kind stowage renders: its type and validator.
type kindInfo struct {
	gvk       schema.GroupVersionKind
	newObject func() runtime.Object
	validate  func(runtime.Object) field.ErrorList
}

// kinds lists the kinds Check accepts, in the order the unsupported-kind
// message names them.
var kinds = []kindInfo{
	{
		gvk:       appsv1.SchemeGroupVersion.WithKind("DaemonSet"),
		newObject: func() runtime.Object { return new(appsv1.DaemonSet) },
		validate:  func(o runtime.Object) field.ErrorList { return validateDaemonSet(o.(*appsv1.DaemonSet)) },
	},
	{
		gvk:       corev1.SchemeGroupVersion.WithKind("ConfigMap"),
		newObject: func() runtime.Object { return new(corev1.ConfigMap) },
		validate:  func(o runtime.Object) field.ErrorList { return validateConfigMap(o.(*corev1.ConfigMap)) },
	},
	{
		gvk:       corev1.SchemeGroupVersion.WithKind("Secret"),
		newObject: func() runtime.Object { return new(corev1.Secret) },
		validate:  func(o runtime.Object) field.ErrorList { return validateSecret(o.(*corev1.Secret)) },
	},
}

// scheme knows the k8s.io/api groups stowage renders; the strict decoder
// needs it to create and type objects. Built on first use: registering the
// groups costs milliseconds that a KRM function run should not pay at start.
var scheme = sync.OnceValue(func() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(appsv1.AddToScheme(s))
	utilruntime.Must(corev1.AddToScheme(s))
	utilruntime.Must(rbacv1.AddToScheme(s))
	utilruntime.Must(admissionv1.AddToScheme(s))
	return s
})

// decoder is apimachinery's strict YAML serializer (JSON is YAML): it runs
// sigs.k8s.io/yaml.YAMLToJSONStrict for duplicate keys and
// sigs.k8s.io/json.UnmarshalStrict for unknown and duplicate fields, which
// case-sensitively matches field names and reports each violation with its
// path.
var decoder = sync.OnceValue(func() *kjson.Serializer {
	return kjson.NewSerializerWithOptions(kjson.DefaultMetaFactory, scheme(), scheme(),
		kjson.SerializerOptions{Yaml: true, Strict: true})
})

// check implements Check for the document numbered n of a stream (0 alone).
func check(doc []byte, n int) error {
	var head map[string]any
	if err := yaml.Unmarshal(doc, &head); err != nil {
		return newError(n, identity{}, field.ErrorList{decodeError(err)})
	}
	id := identity{apiVersion: stringAt(head, "apiVersion"), kind: stringAt(head, "kind")}
	if md, ok := head["metadata"].(map[string]any); ok {
		id.namespace, id.name = stringAt(md, "namespace"), stringAt(md, "name")
	}

	var errs field.ErrorList
	if id.apiVersion == "" {
		errs = append(errs, field.Required(field.NewPath("apiVersion"), ""))
	}
	if id.kind == "" {
		errs = append(errs, field.Required(field.NewPath("kind"), ""))
	}
	if len(errs) > 0 {
		return newError(n, id, errs)
	}
	k, ok := kindOf(id.apiVersion, id.kind)
	if !ok {
		if ck, ok := customKindOf(id.apiVersion, id.kind); ok {
			return newError(n, id, checkCustom(doc, ck))
		}
		return newError(n, id, field.ErrorList{unsupportedKind(id)})
	}

	obj := k.newObject()
	if _, _, err := decoder().Decode(doc, nil, obj); err != nil {
		strict, ok := runtime.AsStrictDecodingError(err)
		if !ok {
			return newError(n, id, field.ErrorList{decodeError(err)})
		}
		// A strict error leaves obj fully decoded, so validation goes on.
		for _, e := range strict.Errors() {
			errs = append(errs, strictError(e, k.gvk))
		}
	}
	errs = append(errs, k.validate(obj)...)
	return newError(n, id, errs)
}

// stringAt returns m[key] if it is a string, else "".
func stringAt(m map[string]any, key string) string {
	s, _ := m[key].(string)
	return s
}

// kindOf finds a supported kind by apiVersion and kind.
func kindOf(apiVersion, kind string) (kindInfo, bool) {
	for _, k := range kinds {
		if k.gvk.GroupVersion().String() == apiVersion && k.gvk.Kind == kind {
			return k, true
		}
	}
	return kindInfo{}, false
}

// kindOfObject finds a supported kind by Go type; a nil pointer has none.
func kindOfObject(obj runtime.Object) (kindInfo, bool) {
	if obj == nil {
		return kindInfo{}, false
	}
	v := reflect.ValueOf(obj)
	if v.Kind() == reflect.Pointer && v.IsNil() {
		return kindInfo{}, false
	}
	for _, k := range kinds {
		if reflect.TypeOf(k.newObject()) == v.Type() {
			return k, true
		}
	}
	return kindInfo{}, false
}

// identityOf names a supported object by its kind and metadata.
func identityOf(obj runtime.Object, k kindInfo) identity {
	id := identity{apiVersion: k.gvk.GroupVersion().String(), kind: k.gvk.Kind}
	if m, err := meta.Accessor(obj); err == nil {
		id.namespace, id.name = m.GetNamespace(), m.GetName()
	}
	return id
}

// typeIdentity names an unsupported object by its TypeMeta, else by the
// scheme's knowledge of its Go type, else by the Go type itself.
func typeIdentity(obj runtime.Object) identity {
	if obj == nil {
		return identity{kind: "<nil>"}
	}
	v := reflect.ValueOf(obj)
	if v.Kind() == reflect.Pointer && v.IsNil() {
		return identity{kind: fmt.Sprintf("%T(nil)", obj)}
	}
	gvk := obj.GetObjectKind().GroupVersionKind()
	if gvk.Kind == "" {
		if gvks, _, err := scheme().ObjectKinds(obj); err == nil && len(gvks) > 0 {
			gvk = gvks[0]
		}
	}
	id := identity{apiVersion: gvk.GroupVersion().String(), kind: gvk.Kind}
	if id.kind == "" {
		id = identity{kind: fmt.Sprintf("%T", obj)}
	}
	if m, err := meta.Accessor(obj); err == nil {
		id.namespace, id.name = m.GetNamespace(), m.GetName()
	}
	return id
}

// unsupportedKind reports a kind stowage does not render, listing those it
// does.
func unsupportedKind(id identity) *field.Error {
	var supported []string
	for _, k := range kinds {
		supported = append(supported, k.gvk.GroupVersion().String()+" "+k.gvk.Kind)
	}
	for _, k := range customKinds {
		supported = append(supported, k.gvk.GroupVersion().String()+" "+k.gvk.Kind)
	}
	got := strings.TrimSpace(id.apiVersion + " " + id.kind)
	fe := field.NotSupported(field.NewPath("kind"), got, supported)
	fe.Detail = "not a kind stowage renders; " + fe.Detail
	return fe
}

// decodeError reports a document that could not be decoded at all (YAML or
// JSON syntax, a value of the wrong type); the message carries the line or
// Go field the decoder names, so the error has no field path of its own.
func decodeError(err error) *field.Error {
	return &field.Error{
		Type:     field.ErrorTypeInvalid,
		BadValue: field.OmitValueType{},
		Detail:   "cannot decode document: " + oneLine(err.Error()),
	}
}

// strictError turns one strict-decoding violation into a field error. The
// violations sigs.k8s.io/json finds carry their path (FieldPath); the ones
// YAMLToJSONStrict finds (duplicate YAML keys) carry only a line number.
func strictError(err error, gvk schema.GroupVersionKind) *field.Error {
	msg := oneLine(err.Error())
	fp, ok := err.(interface{ FieldPath() string })
	if !ok {
		return &field.Error{Type: field.ErrorTypeDuplicate, BadValue: field.OmitValueType{}, Detail: msg}
	}
	path := field.NewPath(fp.FieldPath())
	if strings.HasPrefix(msg, "duplicate field") {
		return &field.Error{Type: field.ErrorTypeDuplicate, Field: path.String(), BadValue: field.OmitValueType{}, Detail: "field is set more than once"}
	}
	return field.Forbidden(path, fmt.Sprintf("unknown field: %s %s has no such field", gvk.GroupVersion(), gvk.Kind))
}

// oneLine collapses a multi-line decoder message onto one line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
