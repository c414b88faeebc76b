package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"testing"
)

// sink keeps spin's result.
var sink uint64

// spin burns about 0.3 s of CPU (on this machine's kind) in a function
// the focus below names; the result keeps the loop from being removed.
//
//go:noinline
func spin() uint64 {
	x := uint64(1)
	for i := range uint64(300_000_000) {
		x = x*6364136223846793005 + i
	}
	return x
}

// pprofEnv turns on TestFocusedSamples: go tool pprof is not shipped
// built since Go 1.25, and building it from an empty cache takes about a
// CPU minute (hack/parts.sh pprof; .ci/run sets it).
const pprofEnv = "STOWAGE_REQUIRE_PPROF"

// TestFocusedSamples profiles this test spinning in spin and checks that
// focusedSamples finds the spin inside the total, and 0 for a focus that
// matches nothing. It runs only with STOWAGE_REQUIRE_PPROF set.
func TestFocusedSamples(t *testing.T) {
	if os.Getenv(pprofEnv) == "" {
		t.Skip("pprof: SKIPPED reading a CPU profile with go tool pprof (hack/perf; Go builds the tool from source on first use, about a CPU minute from an empty cache): set " + pprofEnv + "=1 to run it, as .ci/run does; make bench uses the same tool")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Fatal("go is not on PATH")
	}
	prof := filepath.Join(t.TempDir(), "cpu.pprof")
	f, err := os.Create(prof)
	if err != nil {
		t.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		t.Fatal(err)
	}
	sink = spin()
	pprof.StopCPUProfile()
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	total, in, err := focusedSamples(prof, `perf\.spin$`)
	if err != nil {
		t.Fatal(err)
	}
	if in < 50 || in > total || in < total/2 {
		t.Errorf("focusedSamples = total %v ms, in spin %v ms; want at least 50 ms in spin, and most of the total", total, in)
	}
	total2, none, err := focusedSamples(prof, `nothingIsCalledThis$`)
	if err != nil {
		t.Fatal(err)
	}
	if none != 0 || total2 != total {
		t.Errorf("a focus matching nothing: total %v, focused %v; want total %v, focused 0", total2, none, total)
	}
}
