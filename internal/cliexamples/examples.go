// Package cliexamples holds the Examples sections of stowage's commands,
// apart from the man-page generator (internal/clidocs) so that the front
// binary, which links no cobra/doc, prints the same --help.
package cliexamples

import "github.com/spf13/cobra"

// Examples are the Examples sections of the commands that do not set
// their own (render, mirror and openpai package-cache do), by command
// path. cmd/stowage's TestEveryCommandHasExamples holds every visible
// command to one.
var Examples = map[string]string{
	"stowage": `  # start a config, resolve its images, check it, render it
  stowage init platform/prepull
  stowage lock platform/prepull
  stowage vet platform/prepull
  stowage render platform/prepull --output-dir clusters/prod/prepull

  # the flags every command takes to bound a config's evaluation
  stowage help limits`,
	"stowage init": `  # a starter config in a new directory
  stowage init platform/prepull

  # another image, namespace and profile name
  stowage init platform/prepull --image ghcr.io/example/notebook:v1 --namespace notebooks --profile prod`,
	"stowage vet": `  # the config and the lock, offline
  stowage vet platform/prepull

  # every pinned digest still exists upstream, as JSON
  stowage vet platform/prepull --remote -o json

  # on the site: the site registry holds everything the output names
  stowage vet platform/prepull --site`,
	"stowage lock": `  # resolve what the lock lacks and drop unused entries
  stowage lock platform/prepull

  # CI, no registry: exit 1 listing what would change
  stowage lock platform/prepull --check

  # through a local or site registry, set once for every command
  export STOWAGE_INSECURE_REGISTRY=127.0.0.1:5000
  export STOWAGE_MIRROR=docker.io=127.0.0.1:5000/docker.io,ghcr.io=127.0.0.1:5000/ghcr.io
  stowage lock platform/prepull`,
	"stowage bump": `  # re-resolve every tag; print a pull request title and markdown body
  stowage bump platform/prepull

  # the bot: lock, rendered output and PR body together, JSON on stdout
  stowage bump platform/prepull --render clusters/prod/prepull --pr-body pr.md -o json --exit-code`,
	"stowage schema": `  # the CUE schema, for reading or for cue vet
  stowage schema > stowage.schema.cue

  # JSON Schema for YAML editors (yaml-language-server)
  stowage schema --format jsonschema > stowage.schema.json`,
	"stowage openpai": `  stowage openpai services examples/openpai-offline
  stowage openpai package-cache examples/openpai-offline`,
	"stowage openpai services": `  # the reduced service list, the paictl command and the bytes saved
  stowage openpai services examples/openpai-offline

  # as markdown for a runbook, or JSON
  stowage openpai services examples/openpai-offline -o markdown`,
	"stowage fn": `  # as an exec KRM function: kustomize runs it with a ResourceList on stdin
  kustomize build --enable-alpha-plugins --enable-exec platform/prepull

  # by hand
  kustomize cfg cat --wrap-kind ResourceList platform/prepull | stowage fn`,
	"stowage version": `  stowage version
  stowage version -o json`,
	"stowage status": `  # which image is on which node, once
  stowage status platform/prepull --profile prod

  # after an apply: wait until every image is on every targeted node
  stowage status platform/prepull --wait 10m -o json`,
	"stowage cmp": `  stowage cmp discover .
  stowage cmp generate .`,
	"stowage cmp discover": `  # in the Application's directory, as argocd-cmp-server runs it
  stowage cmp discover .`,
	"stowage cmp generate": `  # the manifests on stdout, the profile from the Application's plugin env
  ARGOCD_ENV_PROFILE=prod stowage cmp generate .`,
	"stowage push": `  # render and push the artifact a Flux OCIRepository pulls
  stowage push platform/prepull oci://registry.example.com/gitops/prepull:prod \
    --source https://git.example.com/gitops.git --revision main@sha1:$(git rev-parse HEAD)`,
	"stowage docs":   `  SOURCE_DATE_EPOCH=$(git log -1 --format=%ct) stowage docs dist/docs`,
	"stowage limits": `  stowage render big-config --max-config-bytes 67108864 --config-timeout 2m`,
}

// SetExamples gives c and every command under it without an Example its
// entry of Examples.
func SetExamples(c *cobra.Command) {
	if c.Example == "" {
		c.Example = Examples[c.CommandPath()]
	}
	for _, sub := range c.Commands() {
		SetExamples(sub)
	}
}
