package render

import "k8s.io/apimachinery/pkg/runtime"

// Objects converts objs, the objects of the public render package
// (render.Render's; any type with Object's fields), to Objects, for the
// writers and checks of this module that take them. The objects are
// shared, not copied.
func Objects[O ~struct {
	Kind      string
	Namespace string
	Name      string
	Object    runtime.Object
}](objs []O) []Object {
	out := make([]Object, len(objs))
	for i, o := range objs {
		out[i] = Object(o)
	}
	return out
}
