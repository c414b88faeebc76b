package bump

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/output"
	"github.com/stowage/stowage/internal/plan"
	"github.com/stowage/stowage/internal/registry"
	engine "github.com/stowage/stowage/internal/render"
	"github.com/stowage/stowage/render"
)

// Input is what one `stowage bump` run starts from and where it writes.
type Input struct {
	// Config is the source's config; Dir its directory (DIR), which
	// render reads trust files and file: passwords under.
	Config *v1alpha1.Config
	Dir    string
	// LockPath is the lock file; Old the lock it holds (empty when it
	// does not exist) and OldData its bytes.
	LockPath string
	// LockRoot and LockRel, when set, confine the lock's write to the
	// directory LockRoot (LockRel inside it; source.Source.LockIn).
	LockRoot, LockRel string
	Old               *lock.Lock
	OldData           []byte
	// Images are every image of the source (plan.All), the ones resolved
	// again.
	Images []*plan.Image
	// RenderDir, when set (--render), is the directory Profile is
	// rendered into with the new lock; Getenv reads the env: passwords
	// that render needs.
	RenderDir string
	Profile   string
	Getenv    func(string) (string, bool)
	// PRBody, when set (--pr-body), is the file the pull request body is
	// written to, behind output.PRBodyMarker.
	PRBody string
	// KeepGoing (--keep-going) writes what resolved when some images
	// fail, the failed ones keeping their old entries.
	KeepGoing bool
	// Connect is called once the outputs are checked and before anything
	// is resolved; its error is returned as it is. It returns resolve,
	// which resolves every tag of Images again from Old (registry.Refresh,
	// pins checked and signatures verified) into the new lock: on failure
	// an error, with the lock of the images that resolved when the error
	// is a registry.Errors.
	Connect func() (resolve func(context.Context) (*lock.Lock, error), err error)
}

// Result is what a bump run changed and wrote.
type Result struct {
	// Report is the pull request title, branch, body and changes.
	Report Report
	// Changes are Diff of the old and the new lock.
	Changes []Change
	// Entries is the number of entries of the new lock.
	Entries int
	// LockChanged and RenderChanged say whether the lock's bytes and the
	// files of RenderDir changed (each then written).
	LockChanged, RenderChanged bool
	// Err, with KeepGoing, is the failure of the images that did not
	// resolve, after the others were written.
	Err error
}

// Changed reports whether the run changed anything: an entry, the lock's
// bytes or the rendered files (bump --exit-code).
func (r *Result) Changed() bool {
	return len(r.Changes) > 0 || r.LockChanged || r.RenderChanged
}

// Run is one bump transaction: the outputs checked against the config,
// the lock and each other before a registry is contacted; every tag
// resolved again; the profile rendered with the new lock before anything
// is written, so that a failed render leaves every file as it was; then
// the lock, the RenderDir files and the PRBody file written together or
// not at all (a failed or interrupted write puts back the ones made
// before it), each only when it changed.
//
// When images fail the lock is not changed and the error says so, unless
// KeepGoing and the failures are a registry.Errors: then what resolved is
// written and Result.Err names the failures.
func Run(ctx context.Context, in Input) (*Result, error) {
	path := in.LockPath
	if err := output.CheckPaths(output.Paths{ConfigDir: in.Dir, Lock: path, RenderDir: in.RenderDir, RenderFlag: "--render", PRBody: in.PRBody}); err != nil {
		return nil, err
	}
	resolve, err := in.Connect()
	if err != nil {
		return nil, err
	}
	next, lockErr := resolve(ctx)
	var failed registry.Errors
	if lockErr != nil && (!in.KeepGoing || next == nil || !errors.As(lockErr, &failed)) {
		return nil, fmt.Errorf("%s not changed: %w", path, lockErr)
	}
	res := &Result{Changes: Diff(in.Old, next, in.Images), Entries: len(next.Entries)}
	out := next.Marshal()
	res.LockChanged = !bytes.Equal(out, in.OldData)

	files, modes, renderChanged, err := renderAgain(in, next)
	if err != nil {
		return nil, err
	}
	res.RenderChanged = renderChanged
	var ws output.Set
	if res.LockChanged {
		if in.LockRoot != "" {
			ws.FileIn(in.LockRoot, in.LockRel, out)
		} else {
			ws.File(path, out)
		}
	}
	if renderChanged {
		ws.Dir(in.RenderDir, files, modes)
	}
	bo := BodyOptions{LockFile: path, RenderDir: in.RenderDir}
	for _, e := range failed {
		bo.Failed = append(bo.Failed, Failure{Key: e.Key, Image: e.Image, Message: e.Error()})
	}
	res.Report = NewReport(res.Changes, bo)
	if in.PRBody != "" && res.Report.Body != "" {
		ws.File(in.PRBody, []byte(output.PRBodyMarker+res.Report.Body))
	}
	if err := ws.Commit(ctx); err != nil {
		return nil, err
	}
	if lockErr != nil {
		res.Err = fmt.Errorf("--keep-going: %w\nthe other images were bumped; the failed ones keep their old entries in %s", lockErr, path)
	}
	return res, nil
}

// renderAgain renders in.Profile with the new lock next into the files of
// in.RenderDir (none without one), with the modes of those that are not
// 0644 (render.FileModes), and says whether their bytes differ from what
// the directory holds.
func renderAgain(in Input, next *lock.Lock) (map[string][]byte, map[string]fs.FileMode, bool, error) {
	if in.RenderDir == "" {
		return nil, nil, false, nil
	}
	pw, trust, err := render.ReadNeeded(in.Dir, in.Config, in.Profile, in.Getenv)
	var rendered []render.Object
	if err == nil {
		rendered, err = render.Render(render.Input{Config: in.Config, Lock: next.Object(), Profile: in.Profile, Passwords: pw, Trust: trust})
	}
	if err != nil {
		return nil, nil, false, fmt.Errorf("--render %s: %w", in.RenderDir, err)
	}
	objs := engine.Objects(rendered)
	files, err := engine.Files(objs)
	if err != nil {
		return nil, nil, false, err
	}
	if err := output.CheckDir(in.RenderDir, "--render"); err != nil {
		return nil, nil, false, fmt.Errorf("--render: %w", err)
	}
	diff, err := output.Diff(in.RenderDir, files)
	if err != nil {
		return nil, nil, false, err
	}
	return files, engine.FileModes(objs), len(diff) > 0, nil
}
