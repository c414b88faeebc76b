package schema_test

import (
	"fmt"
	"time"

	"github.com/stowage/stowage/schema"
)

// Load a config directory: its .cue, .yaml and .json files unified with
// the schema and validated, every profile's effective settings filled in.
func ExampleLoad() {
	cfg, err := schema.Load("../examples/openpai-offline", schema.WithLimits(schema.Limits{Time: 30 * time.Second}))
	if err != nil {
		fmt.Println(err)
		return
	}
	_, p, _ := cfg.Profile("offline")
	fmt.Println(cfg.ProfileNames(), p.Site.Registry, p.Pullers[0].Name)
	// Output: [offline] registry.pai.lab.internal:5000/mirror openpai-prepull
}

// A problem is an error naming the file, line, column and field.
func ExampleLoadFiles() {
	_, err := schema.LoadFiles("cfg", []schema.File{{Name: "cfg/stowage.yaml", Data: []byte(
		"images:\n  app: {reference: busybox:1.36, colour: red}\nprofiles:\n  lab:\n    namespace: prepull\n    pullers: [{name: tools, namespace: prepull, images: [app]}]\n")}})
	fmt.Println(err)
	// Output: cfg/stowage.yaml:2:34: images.app.colour: field not allowed (allowed here: artifact, auth, byNodeLabel, platforms, reference, verify)
}
