//go:build !unix

package isolate

// LimitAddressSpace does nothing where there is no RLIMIT_AS: the child's
// heap watch and the parent's time limit still hold.
func LimitAddressSpace(uint64) {}
