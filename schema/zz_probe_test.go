package schema
import ("testing")
func loadP(t *testing.T, files ...string) {
  var fs []File
  for i:=0;i<len(files);i+=2 { fs = append(fs, File{Name: files[i], Data: []byte(files[i+1])}) }
  _, err := LoadFiles("cfg", fs, Options{})
  t.Logf("ERR:\n%v", err)
}
const profP = "profiles: p: pullers: [{name: \"n\", namespace: \"ns\", environments: [\"jupyter\"]}]\n"
func TestPSame(t *testing.T){
  loadP(t, "cfg/a.yaml", "environments:\n  jupyter:\n    image: apache/submarine:jupyter-notebook-0.7.0\n",
     "cfg/b.yaml", "environments:\n  jupyter:\n    image: apache/submarine:jupyter-notebook-0.7.0-chinese\n",
     "cfg/p.cue", "package stowage\n"+profP)
}
func TestPSameCUE(t *testing.T){
  loadP(t, "cfg/a.cue", "package stowage\nenvironments: jupyter: image: \"apache/submarine:jupyter-notebook-0.7.0\"\n",
     "cfg/b.cue", "package stowage\nenvironments: jupyter: image: \"apache/submarine:jupyter-notebook-0.7.0-chinese\"\n",
     "cfg/p.cue", "package stowage\n"+profP)
}
func TestPUnknownAndMulti(t *testing.T){
  loadP(t, "cfg/a.yaml", "environments:\n  jupyter:\n    image: apache/submarine:jupyter-notebook-0.7.0\n    nodeSelectr: {a: b}\n",
     "cfg/p.yaml", "profiles:\n  p:\n    pullers:\n    - name: n\n      namespace: Tenant_A\n      environments: [jupyter]\n      refreshHours: two\n    - name: m\n      namespace: ns\n      bogus: 1\n      environments: [jupyter, 5]\n")
}
func TestPGoOnly(t *testing.T){
  loadP(t, "cfg/a.yaml", "environments:\n  jupyter:\n    image: apache/submarine:jupyter-notebook-0.7.0\n    nodeSelector: {\"gpu type\": a100}\n",
     "cfg/p.yaml", "profiles:\n  p:\n    pullers:\n    - name: n\n      namespace: Tenant_A\n      environments: [jupyter]\n      refreshHours: two\n    - name: m\n      namespace: ns\n      environments: []\n")
}
func TestPRefErr(t *testing.T){
  loadP(t, "cfg/a.cue", "package stowage\nenvironments: jupyter: image: _img\nprofiles: p: pullers: [{name: 5, namespace: \"x\"}]\n", "cfg/b.cue", "package other\n")
  loadP(t, "cfg/a.cue", "package stowage\nenvironments: jupyter: image: _img\nprofiles: p: pullers: [{name: 5, namespace: \"x\"}]\n")
  loadP(t, "cfg/a.cue", "package stowage\nenvironments: jupyter: image: _img\nprofiles: p: pullers: [{name: 5, namespace: \"x\", \n")
  loadP(t, "cfg/a.yaml", "profiles:\n  p:\n    pullers:\n    - name: n\n       namespace: x\n")
}
