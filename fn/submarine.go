package fn

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/kustomize/kyaml/yaml"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/schema"
)

// JupyterImagePuller is the object of the Submarine design, field for field
// as its seed writes it. Status is read and ignored (stowage keeps no
// state in the cluster).
type JupyterImagePuller struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   metav1.ObjectMeta `json:"metadata"`
	Spec       JupyterSpec       `json:"spec"`
	Status     any               `json:"status,omitempty"`
}

// JupyterSpec is the spec of a JupyterImagePuller.
type JupyterSpec struct {
	// Images are the environments to pre-pull.
	Images []JupyterImage `json:"images"`
	// NodeSelector applies to the pods of the DaemonSet.
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
	// RefreshHours is hours between checks, written as a string ('2').
	RefreshHours any `json:"refreshHours,omitempty"`
	// RecordsName names the records ConfigMap (stowage's addition; the
	// design's name is submarine-image-pull-operator-records). Default:
	// <metadata.name>-records.
	RecordsName string `json:"recordsName,omitempty"`
}

// JupyterImage is one environment of a JupyterImagePuller.
type JupyterImage struct {
	Name  string       `json:"name"`
	Image string       `json:"image"`
	Auth  *JupyterAuth `json:"auth,omitempty"`
}

// JupyterAuth is docker registry authentication: an existing Secret, or a
// username and an inline password (and optional email).
type JupyterAuth struct {
	Username string `json:"username,omitempty"`
	Password string `json:"password,omitempty"`
	Email    string `json:"email,omitempty"`
	Secret   string `json:"secret,omitempty"`
}

// submarine converts a JupyterImagePuller into stowage config and validates
// it with the schema: one profile and one puller named after the object, in
// its namespace ("default" when unset), with one environment per image.
// Problems are results; ok is false when one is an error.
func (s *session) submarine(fc *yaml.RNode) (fnConfig, bool) {
	// Every problem at once: a field of the wrong type does not stop the
	// checks of the others.
	jip, bad := s.decodeJupyter(fc)
	allowInline := jip.Metadata.Annotations[AllowInlinePasswordsAnnotation] == "true"
	ns := jip.Metadata.Namespace
	if ns == "" {
		ns = "default"
	}
	if len(jip.Spec.Images) == 0 {
		if len(bad) == 0 {
			s.errorf(fc, "spec.images", "%s %q lists no images", SubmarineKind, jip.Metadata.Name)
		}
		return fnConfig{}, false
	}
	envs, order, first, ok := s.submarineEnvironments(fc, jip, ns, allowInline, bad)
	if !ok || len(bad) > 0 {
		return fnConfig{}, false
	}
	conf, ok := s.submarineConfig(fc, jip, ns, envs, order)
	if !ok {
		return fnConfig{}, false
	}
	data, err := sigsyaml.Marshal(conf)
	if err != nil {
		s.errorf(fc, "", "%v", err)
		return fnConfig{}, false
	}
	cfg, err := schema.LoadFiles(s.p.Dir, []schema.File{{Name: submarineFile, Data: data}},
		append([]schema.Option{schema.Options{AllowLiteralPasswords: allowInline}}, s.p.ConfigOptions...)...)
	if err != nil {
		var es schema.Errors
		if !errors.As(err, &es) {
			s.errorf(fc, "", "%v", err)
			return fnConfig{}, false
		}
		for _, e := range es {
			s.errorf(fc, submarineField(e.Path, first), "%s", e.Msg)
		}
		return fnConfig{}, false
	}
	// A password's place in the converted config, as cfg.PasswordAt
	// gives it, back to the JupyterImagePuller field.
	fields := map[v1alpha1.Position]string{}
	for name := range first {
		if at := cfg.PasswordAt("environments", name); !at.IsZero() {
			fields[at] = submarineField("environments."+strconv.Quote(name)+".auth.password", first)
		}
	}
	return fnConfig{cfg: cfg, profile: jip.Metadata.Name, passwordFields: fields}, true
}

// submarineEnvironments converts jip's images into config environments:
// envs by name, their names in order, and first, the index of each
// name's first image. An image without a name (unless bad already says
// its name field is wrong), a name given to two different images and an
// inline password without the annotation are error results; ok is false
// after any.
func (s *session) submarineEnvironments(fc *yaml.RNode, jip JupyterImagePuller, ns string, allowInline bool, bad map[string]bool) (envs map[string]any, order []string, first map[string]int, ok bool) {
	envs, first, ok = map[string]any{}, map[string]int{}, true
	for i, im := range jip.Spec.Images {
		field := fmt.Sprintf("spec.images[%d]", i)
		if im.Name == "" {
			if bad[field+".name"] {
				continue
			}
			s.errorf(fc, field+".name", "image %q needs a name (the environment name)", im.Image)
			ok = false
			continue
		}
		if j, dup := first[im.Name]; dup {
			prev := jip.Spec.Images[j].Image
			if prev != im.Image {
				s.errorf(fc, field+".name", "environment name %q is used twice, for %q (spec.images[%d]) and %q (spec.images[%d]); give each image its own name",
					im.Name, prev, j, im.Image, i)
				ok = false
			}
			continue
		}
		first[im.Name] = i
		order = append(order, im.Name)
		env := map[string]any{"image": im.Image}
		if a := im.Auth; a != nil {
			auth, authOK := s.submarineAuth(fc, field, a, ns, allowInline)
			ok = ok && authOK
			env["auth"] = auth
		}
		envs[im.Name] = env
	}
	return envs, order, first, ok
}

// submarineAuth is the config auth of the image at field: its Secret,
// username, email and password. An inline password (not env: or file:)
// is an error result unless the annotation accepts it (a warning then);
// ok is false after the error.
func (s *session) submarineAuth(fc *yaml.RNode, field string, a *JupyterAuth, ns string, allowInline bool) (map[string]any, bool) {
	auth := map[string]any{}
	if a.Secret != "" {
		auth["secret"] = a.Secret
	}
	if a.Username != "" {
		auth["username"] = a.Username
	}
	if a.Email != "" {
		auth["email"] = a.Email
	}
	if a.Password == "" {
		return auth, true
	}
	auth["password"] = a.Password
	if isSource(a.Password) {
		return auth, true
	}
	if !allowInline {
		s.errorf(fc, field+".auth.password",
			"inline registry passwords are refused: they would sit in Git and in the rendered Secret. Create a kubernetes.io/dockerconfigjson Secret in namespace %s (kubectl create secret docker-registry NAME --docker-server=… --docker-username=… --docker-password=…) and write auth: {secret: NAME}; or use password: env:VARIABLE; or annotate the %s with %s: \"true\" to accept inline passwords",
			ns, SubmarineKind, AllowInlinePasswordsAnnotation)
		return auth, false
	}
	s.warnf(fc, field+".auth.password", "inline registry password accepted because of %s: \"true\"; it ends up in Git and in the rendered Secret", AllowInlinePasswordsAnnotation)
	return auth, true
}

// submarineConfig is the stowage config of jip with its environments:
// one profile named after the object with one puller in namespace ns
// (node selector, refresh hours and records name as jip gives them), the
// profile's verify policy, helper images and site registry from its
// annotations. A verify annotation that is no YAML is an error result;
// ok is false then.
func (s *session) submarineConfig(fc *yaml.RNode, jip JupyterImagePuller, ns string, envs map[string]any, order []string) (map[string]any, bool) {
	puller := map[string]any{
		"name":         jip.Metadata.Name,
		"namespace":    ns,
		"environments": order,
	}
	if len(jip.Spec.NodeSelector) > 0 {
		puller["nodeSelector"] = jip.Spec.NodeSelector
	}
	if jip.Spec.RefreshHours != nil {
		puller["refreshHours"] = jip.Spec.RefreshHours
	}
	if jip.Spec.RecordsName != "" {
		puller["recordsName"] = jip.Spec.RecordsName
	}
	profile := map[string]any{"pullers": []any{puller}}
	if v, ok := jip.Metadata.Annotations[VerifyAnnotation]; ok {
		var pol any
		if err := sigsyaml.Unmarshal([]byte(v), &pol); err != nil {
			s.errorf(fc, "metadata.annotations."+VerifyAnnotation, "not a YAML mapping of verify fields ({keys: [keys/release.pub]}): %v", err)
			return nil, false
		}
		profile["verify"] = pol
	}
	conf := map[string]any{
		"environments": envs,
		"profiles":     map[string]any{jip.Metadata.Name: profile},
	}
	// The design's spec has no helper or site: annotations set them.
	helper := map[string]any{}
	for key, ann := range map[string]string{"image": HelperImageAnnotation, "pause": HelperPauseAnnotation} {
		if v, ok := jip.Metadata.Annotations[ann]; ok {
			helper[key] = v
		}
	}
	if len(helper) > 0 {
		conf["helper"] = helper
	}
	if v, ok := jip.Metadata.Annotations[SiteRegistryAnnotation]; ok {
		conf["site"] = map[string]any{"registry": v}
	}
	return conf, true
}

// submarineFile is the name of the config a JupyterImagePuller is
// converted to; it appears in no message (see fnConfig.passwordFields).
const submarineFile = "JupyterImagePuller.yaml"

// isSource reports whether a password is a stowage password source rather
// than the password itself.
func isSource(p string) bool {
	return strings.HasPrefix(p, schema.PasswordFromEnv) || strings.HasPrefix(p, schema.PasswordFromFile)
}

// submarineField maps a path of the converted config back to the
// JupyterImagePuller field it came from.
func submarineField(path string, first map[string]int) string {
	switch {
	case path == "helper.image":
		return "metadata.annotations." + HelperImageAnnotation
	case path == "helper.pause":
		return "metadata.annotations." + HelperPauseAnnotation
	case strings.HasPrefix(path, "profiles.") && (strings.HasSuffix(path, ".verify") || strings.Contains(path, ".verify.")):
		return "metadata.annotations." + VerifyAnnotation
	case path == "site.registry" || strings.HasPrefix(path, "profiles.") && strings.HasSuffix(path, ".site.registry"):
		return "metadata.annotations." + SiteRegistryAnnotation
	case strings.HasPrefix(path, "environments."):
		rest := strings.TrimPrefix(path, "environments.")
		for name, i := range first {
			for _, q := range []string{name, fmt.Sprintf("%q", name)} {
				if rest == q || strings.HasPrefix(rest, q+".") {
					return fmt.Sprintf("spec.images[%d]", i) + strings.TrimPrefix(rest, q)
				}
			}
		}
	case strings.Contains(path, ".pullers[0]."):
		_, f, _ := strings.Cut(path, ".pullers[0].")
		switch {
		case f == "name":
			return "metadata.name"
		case f == "namespace":
			return "metadata.namespace"
		case strings.HasPrefix(f, "nodeSelector"), f == "refreshHours", f == "recordsName":
			return "spec." + f
		}
	}
	return "spec"
}
