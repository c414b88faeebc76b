package openpai

import (
	"strings"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/internal/imageref"
	"github.com/stowage/stowage/internal/lock"
)

// reportRoles are the roles a services report lists, in its order.
var reportRoles = []Role{RoleMaster, RoleWorker, RoleAll}

// ServicesReport is the report `stowage openpai services` prints for red:
// the kept and dropped services with their reasons, the paictl command,
// each role's images as list returns them (the rendered ConfigMap's
// images.<role>.list; red's own references when list is nil) beside the
// source references, the bytes per role from the observed sizes, and,
// when l is not nil, the bytes to mirror per role from the lock's sizes.
// An error is list's.
func ServicesReport(red *Reduction, list func(Role) ([]string, error), l *lock.Lock) (v1alpha1.OpenPAIServicesReport, error) {
	rep := v1alpha1.OpenPAIServicesReport{
		Version: red.Version, Kept: red.Kept, Dropped: red.Dropped, StartOrder: red.StartOrder,
		Paictl: "./paictl.py " + strings.Join(red.PaictlArgs, " "),
		Images: map[string][]string{}, SourceImages: map[string][]string{},
		KeptBy: map[string]v1alpha1.OpenPAIKeptReason{},
	}
	for k, r := range red.KeptBy {
		rep.KeptBy[k] = v1alpha1.OpenPAIKeptReason{Feature: r.Feature, Chain: r.Chain}
	}
	for _, r := range reportRoles {
		rep.Images[string(r)] = append([]string{}, red.Images[r]...)
		rep.SourceImages[string(r)] = append([]string{}, red.Images[r]...)
		if list != nil {
			imgs, err := list(r)
			if err != nil {
				return rep, err
			}
			rep.Images[string(r)] = imgs
		}
	}
	for _, b := range red.Bytes() {
		rep.Bytes = append(rep.Bytes, v1alpha1.OpenPAIRoleBytes{Role: string(b.Role), Full: b.Full, Reduced: b.Reduced, Saved: b.Saved,
			UnsizedFull: b.UnknownFull, UnsizedReduced: b.UnknownReduced, UnsizedSaved: b.UnknownFull - b.UnknownReduced})
	}
	if l != nil {
		rep.Locked = LockedBytes(red, l)
	}
	return rep, nil
}

// LockedBytes sums, per role, the lock's recorded size in bytes of each
// reduced-set image: a manifest's size, or the sizes of every child of an
// index (what `stowage mirror` copies). An image the lock has no entry or
// no size for counts in Unlocked instead.
func LockedBytes(red *Reduction, l *lock.Lock) []v1alpha1.OpenPAIRoleLocked {
	var out []v1alpha1.OpenPAIRoleLocked
	for _, r := range reportRoles {
		rl := v1alpha1.OpenPAIRoleLocked{Role: string(r), Images: len(red.Images[r])}
		for _, s := range red.Images[r] {
			ref, err := imageref.Parse(s)
			if err != nil {
				rl.Unlocked++
				continue
			}
			e, ok := l.Lookup(ref.Key())
			size := e.Size
			for _, p := range e.Platforms {
				size += p.Size
			}
			if !ok || size == 0 {
				rl.Unlocked++
				continue
			}
			rl.CompressedBytes += size
		}
		out = append(out, rl)
	}
	return out
}
