package mirror

import (
	"container/heap"
	"sync"
)

// task is one step of a Run's copy: an upload, a mount, a manifest write,
// one subject's referrer writes or a tag. It runs once every task it
// waits on is done, whether that succeeded or failed (a failure is
// recorded in the runner, and the task itself then fails on it).
type task struct {
	do func()
	// upload is a blob upload: those run after the ready tasks that move
	// no bytes, the largest first.
	upload bool
	size   int64
	// order breaks ties: the order the tasks were added in.
	order int
	// waits is the number of tasks not yet done that this one waits on;
	// then are the tasks waiting on this one. Guarded by scheduler.mu
	// once run starts.
	waits int
	then  []*task
}

// scheduler runs tasks on a bounded pool of goroutines, each as soon as
// the tasks it waits on are done.
type scheduler struct {
	tasks []*task

	mu    sync.Mutex
	ready readyQueue
	left  int
	wake  *sync.Cond
}

// add adds a task that runs do after every task of after (nil ones
// ignored, a task listed twice counted once); it returns the task.
func (s *scheduler) add(do func(), after ...*task) *task {
	t := &task{do: do, order: len(s.tasks)}
	seen := map[*task]bool{}
	for _, a := range after {
		if a == nil || seen[a] {
			continue
		}
		seen[a] = true
		a.then = append(a.then, t)
		t.waits++
	}
	s.tasks = append(s.tasks, t)
	return t
}

// run runs every task on up to jobs goroutines, a ready one that moves no
// bytes first, then the largest ready upload, and returns when all are
// done; no goroutine outlives it. The tasks must not wait on one another
// in a cycle (they cannot: a task waits only on tasks added before it).
func (s *scheduler) run(jobs int) {
	s.wake = sync.NewCond(&s.mu)
	s.left = len(s.tasks)
	for _, t := range s.tasks {
		if t.waits == 0 {
			heap.Push(&s.ready, t)
		}
	}
	var wg sync.WaitGroup
	for range min(jobs, len(s.tasks)) {
		wg.Go(s.work)
	}
	wg.Wait()
}

// work runs ready tasks until none is left.
func (s *scheduler) work() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		for s.ready.Len() == 0 && s.left > 0 {
			s.wake.Wait()
		}
		if s.left == 0 {
			s.wake.Broadcast()
			return
		}
		t := heap.Pop(&s.ready).(*task)
		s.mu.Unlock()
		t.do()
		s.mu.Lock()
		s.left--
		woke := 0
		for _, n := range t.then {
			if n.waits--; n.waits == 0 {
				heap.Push(&s.ready, n)
				woke++
			}
		}
		switch {
		case s.left == 0:
			s.wake.Broadcast()
		case woke > 1:
			s.wake.Broadcast()
		case woke == 1:
			s.wake.Signal()
		}
	}
}

// readyQueue orders the ready tasks: those that move no bytes (mounts,
// manifests, tags: short, and each may let an image finish) in the order
// added, then the uploads, the largest first (so that the workers finish
// together instead of a few large uploads running alone at the end).
type readyQueue []*task

func (q readyQueue) Len() int { return len(q) }
func (q readyQueue) Less(i, j int) bool {
	a, b := q[i], q[j]
	if a.upload != b.upload {
		return !a.upload
	}
	if a.size != b.size {
		return a.size > b.size
	}
	return a.order < b.order
}
func (q readyQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *readyQueue) Push(x any)   { *q = append(*q, x.(*task)) }
func (q *readyQueue) Pop() any {
	old := *q
	t := old[len(old)-1]
	old[len(old)-1] = nil
	*q = old[:len(old)-1]
	return t
}
