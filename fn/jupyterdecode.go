package fn

import (
	"fmt"
	"slices"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/fn/framework"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/stowage/stowage/internal/imageref"
	"github.com/stowage/stowage/internal/spelling"
)

// jupyterDecoder reads a JupyterImagePuller field by field from its YAML
// node, so that every unknown field and every value of the wrong type is a
// result at its own field path (spec.images[1].auth.email), and one bad
// field does not hide the others.
type jupyterDecoder struct {
	s  *session
	fc *yaml.RNode
	// bad holds the field paths that had an error.
	bad map[string]bool
}

// decodeJupyter decodes fc into a JupyterImagePuller. It reports every
// problem it finds as a result and returns the field paths that had an
// error (none: it decoded).
func (s *session) decodeJupyter(fc *yaml.RNode) (JupyterImagePuller, map[string]bool) {
	d := &jupyterDecoder{s: s, fc: fc, bad: map[string]bool{}}
	var jip JupyterImagePuller
	top := d.fields(fc, "", []string{"apiVersion", "kind", "metadata", "spec", "status"})
	jip.APIVersion = d.str(top["apiVersion"], "apiVersion")
	jip.Kind = d.str(top["kind"], "kind")
	// Only the metadata stowage uses is read; kustomize and kubectl add
	// others.
	md := d.fields(top["metadata"], "metadata", nil)
	jip.Metadata.Name = d.str(md["name"], "metadata.name")
	jip.Metadata.Namespace = d.str(md["namespace"], "metadata.namespace")
	if n := md["annotations"]; n != nil {
		jip.Metadata.Annotations = d.stringMap(n, "metadata.annotations")
	}
	if st := top["status"]; st != nil {
		jip.Status = true
		s.result(framework.Info, fc, "status", "status is ignored: stowage keeps no state in the cluster; run `stowage status` to see which nodes hold which image")
	}
	spec := d.fields(top["spec"], "spec", []string{"images", "nodeSelector", "refreshHours", "recordsName"})
	if n := spec["images"]; n != nil {
		if n.YNode().Kind != yaml.SequenceNode {
			d.errorf("spec.images", "%s where a list of images is expected", kindName(n))
		} else {
			for i, it := range n.Content() {
				jip.Spec.Images = append(jip.Spec.Images, d.image(yaml.NewRNode(it), fmt.Sprintf("spec.images[%d]", i)))
			}
		}
	}
	if n := spec["nodeSelector"]; n != nil {
		jip.Spec.NodeSelector = d.stringMap(n, "spec.nodeSelector")
	}
	if n := spec["refreshHours"]; n != nil {
		if n.YNode().Kind != yaml.ScalarNode {
			d.errorf("spec.refreshHours", "%s where a number of hours is expected (refreshHours: '2')", kindName(n))
		} else {
			jip.Spec.RefreshHours = n.YNode().Value
		}
	}
	jip.Spec.RecordsName = d.str(spec["recordsName"], "spec.recordsName")
	return jip, d.bad
}

// image decodes one entry of spec.images at field.
func (d *jupyterDecoder) image(n *yaml.RNode, field string) JupyterImage {
	f := d.fields(n, field, []string{"name", "image", "auth"})
	im := JupyterImage{Name: d.str(f["name"], field+".name"), Image: d.str(f["image"], field+".image")}
	if im.Image == "" && f["image"] == nil && n.YNode().Kind == yaml.MappingNode {
		d.errorf(field+".image", "environment %q has no image", im.Name)
	}
	if hint := portAsPath(im.Image); hint != "" {
		d.s.warnf(d.fc, field+".image", "%s", hint)
	}
	if a := f["auth"]; a != nil && a.YNode().Kind == yaml.ScalarNode && a.YNode().Tag != yaml.NodeTagNull {
		d.errorf(field+".auth", "a single value where a mapping is expected: write auth: {secret: NAME} for an existing Secret, or auth: {username: USER, password: env:VARIABLE}")
	} else if a != nil {
		af := d.fields(a, field+".auth", []string{"username", "password", "email", "secret"})
		im.Auth = &JupyterAuth{
			Username: d.str(af["username"], field+".auth.username"),
			Password: d.str(af["password"], field+".auth.password"),
			Secret:   d.str(af["secret"], field+".auth.secret"),
		}
		if e := af["email"]; e != nil && e.YNode().Kind == yaml.SequenceNode {
			d.errorf(field+".auth.email", "a list where an address is expected: `[email protected]` is how the web page hid an address, and YAML reads the brackets as a list; write the address (email: someone@example.org) or leave the field out, it is optional")
		} else {
			im.Auth.Email = d.str(e, field+".auth.email")
		}
	}
	return im
}

// fields returns the fields of mapping n by name; nil n gives none. An
// unknown field is an error naming the nearest known one; nil known
// accepts every field.
func (d *jupyterDecoder) fields(n *yaml.RNode, field string, known []string) map[string]*yaml.RNode {
	out := map[string]*yaml.RNode{}
	if n == nil || n.YNode().Tag == yaml.NodeTagNull {
		return out
	}
	if n.YNode().Kind != yaml.MappingNode {
		d.errorf(orWhole(field), "%s where a mapping is expected", kindName(n))
		return out
	}
	c := n.Content()
	for i := 0; i+1 < len(c); i += 2 {
		k := c[i].Value
		if known != nil && !slices.Contains(known, k) {
			d.errorf(join(field, k), "unknown field %q%s; known fields: %s", k, nearest(k, known), strings.Join(known, ", "))
			continue
		}
		out[k] = yaml.NewRNode(c[i+1])
	}
	return out
}

// str returns the string value of scalar n ("" for nil or null); any
// other kind is an error at field.
func (d *jupyterDecoder) str(n *yaml.RNode, field string) string {
	if n == nil || n.YNode().Tag == yaml.NodeTagNull {
		return ""
	}
	if n.YNode().Kind != yaml.ScalarNode {
		d.errorf(field, "%s where a string is expected", kindName(n))
		return ""
	}
	return n.YNode().Value
}

// stringMap returns mapping n as a map of strings.
func (d *jupyterDecoder) stringMap(n *yaml.RNode, field string) map[string]string {
	if n.YNode().Tag == yaml.NodeTagNull {
		return nil
	}
	if n.YNode().Kind != yaml.MappingNode {
		d.errorf(field, "%s where a mapping of strings is expected", kindName(n))
		return nil
	}
	out := map[string]string{}
	c := n.Content()
	for i := 0; i+1 < len(c); i += 2 {
		out[c[i].Value] = d.str(yaml.NewRNode(c[i+1]), join(field, c[i].Value))
	}
	return out
}

func (d *jupyterDecoder) errorf(field, format string, args ...any) {
	d.bad[field] = true
	d.s.errorf(d.fc, field, format, args...)
}

// kindName names the YAML kind of n the way a user reads it. It never
// shows the value: a misplaced one may be a password.
func kindName(n *yaml.RNode) string {
	switch n.YNode().Kind {
	case yaml.SequenceNode:
		return "a list"
	case yaml.MappingNode:
		return "a mapping"
	case yaml.AliasNode:
		return "an alias"
	}
	return "a single value"
}

func join(field, k string) string {
	if field == "" {
		return k
	}
	return field + "." + k
}

func orWhole(field string) string {
	if field == "" {
		return "."
	}
	return field
}

// nearest returns `, did you mean "x"?` for the known name within two
// edits of k, or "".
func nearest(k string, known []string) string {
	best, bd := "", 3
	for _, c := range known {
		if dd := spelling.Distance(k, c); dd < bd {
			best, bd = c, dd
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

// portAsPath returns a hint when ref names a registry host followed by a
// path component made only of digits (xxx.harbor.com/5000/apache/x):
// pkg/name reads 5000 as part of the repository path, where the writer
// most likely meant the port, xxx.harbor.com:5000/apache/x. "" otherwise,
// and for a reference that does not parse (the schema reports that).
func portAsPath(ref string) string {
	r, err := imageref.Parse(ref)
	if err != nil {
		return ""
	}
	host := r.Registry()
	if !strings.HasPrefix(ref, host+"/") || strings.Contains(host, ":") {
		return ""
	}
	first, rest, _ := strings.Cut(r.Repository.RepositoryStr(), "/")
	if first == "" || strings.Trim(first, "0123456789") != "" || rest == "" {
		return ""
	}
	return fmt.Sprintf("image %q: %q is read as the first part of the repository path on registry %s; if %s is the registry's port, write %s:%s/%s",
		ref, first, host, first, host, first, strings.TrimPrefix(ref, host+"/"+first+"/"))
}
