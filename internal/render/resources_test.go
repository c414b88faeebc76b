package render

import "testing"

// TestDefaultResourcesYield: a request the config sets above the default
// limit raises the limit to it, and a limit below the default request
// lowers the request to it; what the config sets is kept. (FuzzRender's
// regress-request-above-default-limit and regress-limit-below-default-request.)
func TestDefaultResourcesYield(t *testing.T) {
	cfg := loadConfig(t, "c.yaml", `environments: {app: {image: "busybox:1"}}
profiles:
  p:
    pullers:
    - name: pre
      namespace: ns
      environments: [app]
      resources: {requests: {cpu: "1"}, limits: {memory: 8Mi}}
`)
	objs := mustRender(t, Input{Config: cfg, Profile: "p", Lock: lockFor(t, cfg, "p")})
	for _, ds := range daemonSets(objs) {
		for _, c := range append(ds.Spec.Template.Spec.InitContainers, ds.Spec.Template.Spec.Containers...) {
			r := c.Resources
			for name, want := range map[string]string{
				"requests.cpu": "1", "limits.cpu": "1", "requests.memory": "8Mi", "limits.memory": "8Mi",
			} {
				var got string
				switch name {
				case "requests.cpu":
					got = r.Requests.Cpu().String()
				case "limits.cpu":
					got = r.Limits.Cpu().String()
				case "requests.memory":
					got = r.Requests.Memory().String()
				case "limits.memory":
					got = r.Limits.Memory().String()
				}
				if got != want {
					t.Errorf("container %s: %s = %s, want %s", c.Name, name, got, want)
				}
			}
		}
	}
}
