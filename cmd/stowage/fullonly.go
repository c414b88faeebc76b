package main

// The release ships stowage as two binaries (docs/install.md, "Two
// binaries"): the front, `stowage`, built from this package with
// -tags stowagefront, and `stowage-full`, built from it without. The front
// links the config, render, function, lock-free and report paths only; the
// commands below link Helm's SDK (images), sigstore-go (lock, bump,
// vet, mirror), client-go (status) or cobra/doc (docs), whose package
// initialisers would otherwise run at every start-up of render, fn and
// version (docs/benchmarks.md, "Start-up"). The front lists them with
// these summaries and runs stowage-full beside itself for them, with the
// same arguments, standard streams and environment. A build without the
// tag holds every command and runs none of it.

// fullBinary is the name of the binary the front runs for fullOnly
// commands, in the front's own directory (never looked up on $PATH).
const fullBinary = "stowage-full"

// frontVersionEnv is set by the front for stowage-full to the front's
// version (version.Info.String); stowage-full refuses to run for a front
// of another build, so that one release's front never runs another's
// commands.
const frontVersionEnv = "STOWAGE_FRONT_VERSION"

// fullOnly lists the commands only stowage-full holds, with the Short
// summary and visibility each has there; TestFullOnlyCommands holds the
// two builds to the same list.
var fullOnly = []struct {
	name, short string
	hidden      bool
}{
	{name: "bump", short: "Resolve every tag of DIR's config (default .) again and rewrite DIR/stowage.lock.yaml"},
	{name: "docs", hidden: true, short: "Write the man pages (DIR/man/*.1) and shell completions (DIR/completions) that the release archives carry"},
	{name: "images", short: "Write stowage config for the images a vendor's list or a Helm chart names"},
	{name: "lock", short: "Resolve the images DIR's config (default .) uses that DIR/stowage.lock.yaml lacks"},
	{name: "mirror", short: "Copy every locked image of DIR's profiles to a site registry or an OCI-layout bundle, digest for digest"},
	{name: "status", short: "Show which images of a profile are on which node of the current cluster; exit 0 only when all are"},
	{name: "vet", short: "Check the config in DIR (default .) and that the lock covers every image of every profile"},
}
