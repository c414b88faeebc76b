package render

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stowage/stowage/internal/plan"
)

// secret returns the pull Secret for an item's username/password auth in
// namespace, for the registry the node pulls from (the site registry when
// the profile has one). Its name is "stowage-pull-<registry>-<8 hex>", the hex being
// sha256 over registry, username and password source ("env:NAME",
// "file:path", or the words "a literal password" — never the password
// itself), so each distinct credential gets a distinct, stable name and no
// secret material shapes it.
// Object is nil (and an error recorded) when the password is not in
// Input.Passwords and the profile renders Secrets.
func (r *renderer) secret(namespace string, it *item) Object {
	a := it.use.Auth
	key := it.use.PullRef().AuthKey()
	name := plan.PullSecretName(it.use.PullRef(), a)
	o := Object{Kind: "Secret", Namespace: namespace, Name: name}
	if r.prof.Secrets != "render" {
		return o
	}
	pw, ok := r.in.Passwords[a.Password]
	if !ok {
		r.fail("%s: the password source %s of registry %s was not read", it.use.UsedBy(), plan.SourceName(a.Password), key)
		return o
	}
	data, err := DockerConfigJSON(key, a.Username, pw, a.Email)
	if err != nil {
		r.fail("%s: %v", it.use.UsedBy(), err)
		return o
	}
	o.Object = &corev1.Secret{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: namespace, Labels: r.labels(name, "pull-secret"),
		},
		Type: corev1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{corev1.DockerConfigJsonKey: data},
	}
	return o
}

// dockerAuth is one entry of a docker config's "auths" map, in the field
// order docker writes.
type dockerAuth struct {
	Username string `json:"username"`
	Password string `json:"password,omitempty"`
	Email    string `json:"email,omitempty"`
	// Auth is base64("username:password"); kubelet and docker prefer it
	// over the separate fields, and it carries any password bytes exactly.
	Auth string `json:"auth"`
}

// DockerConfigJSON returns the bytes of a kubernetes.io/dockerconfigjson
// Secret's ".dockerconfigjson" key: {"auths":{registryKey:{...}}}. The
// password is carried exactly in "auth" (base64 of username ":" password);
// the plain "password" field is written only when the password is valid
// UTF-8, since JSON strings cannot hold other bytes. The username must not
// contain ':' (basic auth splits on the first ':').
func DockerConfigJSON(registryKey, username string, password []byte, email string) ([]byte, error) {
	if bytes.ContainsRune([]byte(username), ':') {
		return nil, fmt.Errorf("registry %s: a username cannot contain ':'", registryKey)
	}
	entry := dockerAuth{
		Username: username,
		Email:    email,
		Auth:     base64.StdEncoding.EncodeToString(append([]byte(username+":"), password...)),
	}
	if utf8.Valid(password) {
		entry.Password = string(password)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(map[string]map[string]dockerAuth{"auths": {registryKey: entry}}); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
