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

// TestFocusedSamples profiles this test spinning in spin and checks that
// focusedSamples finds the spin inside the total, and 0 for a focus that
// matches nothing.
func TestFocusedSamples(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go is not on PATH")
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
