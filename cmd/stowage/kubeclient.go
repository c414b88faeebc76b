package main

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/rest"
)

// kubeClient reads what stowage status needs (nodes, pods, events and
// DaemonSets) through client-go's REST client with a scheme of core/v1 and
// apps/v1 only. The generated typed clients would import
// k8s.io/client-go/kubernetes/scheme, whose package initialiser registers
// every API group and so costs every stowage command start-up time.
type kubeClient struct {
	core, apps *rest.RESTClient
	params     runtime.ParameterCodec
}

// newKubeClient returns clients for /api/v1 and /apis/apps/v1 on rc.
func newKubeClient(rc *rest.Config) (*kubeClient, error) {
	s := runtime.NewScheme()
	if err := corev1.AddToScheme(s); err != nil {
		return nil, err
	}
	if err := appsv1.AddToScheme(s); err != nil {
		return nil, err
	}
	codecs := serializer.NewCodecFactory(s)
	client := func(gv schema.GroupVersion, apiPath string) (*rest.RESTClient, error) {
		c := rest.CopyConfig(rc)
		c.GroupVersion = &gv
		c.APIPath = apiPath
		c.NegotiatedSerializer = codecs.WithoutConversion()
		return rest.RESTClientFor(c)
	}
	core, err := client(corev1.SchemeGroupVersion, "/api")
	if err != nil {
		return nil, err
	}
	apps, err := client(appsv1.SchemeGroupVersion, "/apis")
	if err != nil {
		return nil, err
	}
	return &kubeClient{core: core, apps: apps, params: runtime.NewParameterCodec(s)}, nil
}

// list reads one page of resource (in namespace ns, "" for cluster-scoped)
// into out.
func (k *kubeClient) list(ctx context.Context, c *rest.RESTClient, ns, resource string, opts metav1.ListOptions, out runtime.Object) error {
	return c.Get().NamespaceIfScoped(ns, ns != "").Resource(resource).VersionedParams(&opts, k.params).Do(ctx).Into(out)
}

// daemonSet reads one DaemonSet.
func (k *kubeClient) daemonSet(ctx context.Context, ns, name string) (*appsv1.DaemonSet, error) {
	ds := &appsv1.DaemonSet{}
	return ds, k.apps.Get().Namespace(ns).Resource("daemonsets").Name(name).Do(ctx).Into(ds)
}
