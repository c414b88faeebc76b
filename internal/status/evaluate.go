package status

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/internal/imageref"
	"github.com/stowage/stowage/internal/words"
)

// State is what a node shows for one image.
type State = v1alpha1.NodeState

// States of an image on a node (v1alpha1.NodeState).
const (
	Present      = v1alpha1.Present
	Pulling      = v1alpha1.Pulling
	Failed       = v1alpha1.Failed
	NotScheduled = v1alpha1.NotScheduled
	Unverified   = v1alpha1.Unverified
)

// Summary states of an image (v1alpha1.Success and the others).
const (
	Success    = v1alpha1.Success
	Failure    = v1alpha1.Failure
	InProgress = v1alpha1.InProgress
)

// The report's types, in api/v1alpha1: the contract of `status -o json`.
type (
	Report      = v1alpha1.StatusReport
	ImageStatus = v1alpha1.ImageStatus
	NodeImage   = v1alpha1.NodeImage
	Rollout     = v1alpha1.Rollout
	Sources     = v1alpha1.Sources
)

// EventTTL is kube-apiserver's default --event-ttl: events older than this
// are gone, so a failure older than it is known only from container
// statuses.
const EventTTL = time.Hour

// NodeStatusMaxImages is the kubelet's default nodeStatusMaxImages: a node
// lists at most this many images in status.images (the largest first), so
// an image missing from a full list may still be on the node.
const NodeStatusMaxImages = 50

// Cluster is what a caller read from the cluster for an Expected.
type Cluster struct {
	// DaemonSets are the live DaemonSets keyed "namespace/name"; a rendered
	// DaemonSet without an entry is not in the cluster.
	DaemonSets map[string]*appsv1.DaemonSet
	// Pods are the pods of those DaemonSets (others are ignored: a pod
	// counts for the DaemonSet that controls it).
	Pods []corev1.Pod
	// Nodes are every node of the cluster.
	Nodes []corev1.Node
	// Events are the events of the DaemonSets' namespaces (others are
	// ignored: an event counts for the pod it names by UID).
	Events []corev1.Event
	// Now is when the objects were read.
	Now time.Time
	// Notes are the reader's own remarks on incomplete sources (a list
	// cut at its limit, events not readable).
	Notes []string
	// ImageGCHighThreshold is the imageGCHighThresholdPercent of the
	// kubelets whose configuration was read (nodes/NAME/proxy/configz),
	// keyed by node name; a node without an entry (refused, absent, or a
	// value outside 1..100) gets the kubelet's default in the disk budget.
	ImageGCHighThreshold map[string]int
}

// imagesHashAnnotation is render.AnnotationImagesHash (not imported: status
// reads clusters, render writes objects).
const imagesHashAnnotation = "stowage.dev/images-hash"

// pullFailures are the container waiting reasons of a failed pull
// (kubelet pkg/kubelet/images: ErrImagePull, ImagePullBackOff,
// ErrImageNeverPull, InvalidImageName; RegistryUnavailable and
// SignatureValidationFailed from older kubelets and runtimes).
var pullFailures = []string{"ErrImagePull", "ImagePullBackOff", "ErrImageNeverPull", "InvalidImageName",
	"RegistryUnavailable", "SignatureValidationFailed", "ErrImageInspect"}

// daemonTolerations are the tolerations the DaemonSet controller adds to
// every daemon pod (k8s.io/kubernetes pkg/controller/daemon/util
// AddOrUpdateDaemonPodTolerations), which decide where its pods run.
var daemonTolerations = []corev1.Toleration{
	{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
	{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
	{Key: corev1.TaintNodeDiskPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	{Key: corev1.TaintNodeMemoryPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	{Key: corev1.TaintNodePIDPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	{Key: corev1.TaintNodeUnschedulable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
}

// Evaluate compares exp with the cluster c. For every image and node it
// takes the most telling state over the DaemonSets that pull the image:
// Failed, then Present, then Pulling, then NotScheduled.
func Evaluate(exp *Expected, c *Cluster) *Report {
	ev := newEvaluator(c)
	rep := &Report{Profile: exp.Profile, Ready: true, Images: []ImageStatus{}, DaemonSets: []Rollout{}, Nodes: []string{},
		Sources: Sources{Complete: true}}
	for _, n := range c.Nodes {
		rep.Nodes = append(rep.Nodes, n.Name)
	}
	slices.Sort(rep.Nodes)
	nodes := slices.Clone(c.Nodes)
	slices.SortFunc(nodes, func(a, b corev1.Node) int { return strings.Compare(a.Name, b.Name) })

	g := &grid{cells: map[string]map[string]NodeImage{}, unobserved: map[string][]string{}, notes: map[string]bool{}}
	for _, ds := range exp.DaemonSets {
		rep.DaemonSets = append(rep.DaemonSets, ev.daemonSet(g, exp, ds, nodes))
	}
	for _, img := range exp.Images {
		st := summarise(img, g.cells[img.Reference], rep.Nodes, g.unobserved[img.Reference])
		st.NodeGroups = nodeGroups(img, st, nodes)
		if st.State != Success {
			rep.Ready = false
		}
		rep.Images = append(rep.Images, st)
	}
	// A DaemonSet missing from the cluster fails the profile even where it
	// targets no node: the profile is not applied; one the controller has
	// not observed yet is not known to target no node.
	for _, r := range rep.DaemonSets {
		if !r.InCluster || !r.Observed {
			rep.Ready = false
		}
	}
	rep.DiskBudget = diskBudget(exp, g, nodes, c)
	rep.Sources.Notes = append(rep.Sources.Notes, c.Notes...)
	for _, n := range slices.Sorted(maps.Keys(g.notes)) {
		rep.Sources.Notes = append(rep.Sources.Notes, n)
	}
	if len(g.notes) > 0 || len(c.Notes) > 0 {
		rep.Sources.Complete = false
	}
	return rep
}

// grid is what the DaemonSets tell about the images so far.
type grid struct {
	// cells[image reference][node] is the state decided so far.
	cells map[string]map[string]NodeImage
	// unobserved[image reference] are the DaemonSets pulling the image
	// that the controller has not observed yet.
	unobserved map[string][]string
	// notes are the remarks on incomplete sources for failing cells.
	notes map[string]bool
}

// daemonSet reads the rendered DaemonSet ds against its live form in the
// cluster: it returns its rollout, and merges into g the state of each of
// its images (those exp expects) on each of nodes (sorted by name), the
// most telling state winning (rank), plus the notes of the cells that are
// neither Present nor NotScheduled and whether the controller has yet to
// observe it.
func (ev *evaluator) daemonSet(g *grid, exp *Expected, ds *appsv1.DaemonSet, nodes []corev1.Node) Rollout {
	key := ds.Namespace + "/" + ds.Name
	live := ev.c.DaemonSets[key]
	ro := rollout(ds, live)
	if live != nil && !ro.Observed {
		for _, ct := range containers(ds) {
			if img := exp.image(ct.Image); img != nil && !slices.Contains(g.unobserved[img.Reference], key) {
				g.unobserved[img.Reference] = append(g.unobserved[img.Reference], key)
			}
		}
	}
	target := ds
	if live != nil {
		target = live
	}
	pods := ev.podsOf(live)
	placement := newPlacement(target)
	for i := range nodes {
		n := &nodes[i]
		why := placement.excludes(n)
		pod := pods[n.Name]
		for _, ct := range containers(ds) {
			img := exp.image(ct.Image)
			if img == nil {
				continue
			}
			cell := ev.nodeCell(key, n, why, live, pod, ct, img)
			if cell.State != Present && cell.State != NotScheduled {
				for _, note := range ev.notesFor(n, pod) {
					g.notes[note] = true
				}
			}
			if cell.State == Unverified {
				g.notes[fmt.Sprintf("artifact %s on node %s: the cluster reports no image volume digest in pod status (the kubelet sets one only with the ImageVolumeWithDigest feature gate of the API server and the kubelet, alpha in Kubernetes 1.35 to 1.37, and kubelet v1.37.2 set none even with it on) and the node's status.images does not list it, so stowage cannot tell which digest is on the node",
					img.Name, n.Name)] = true
			}
			if g.cells[img.Reference] == nil {
				g.cells[img.Reference] = map[string]NodeImage{}
			}
			if prev, ok := g.cells[img.Reference][n.Name]; !ok || rank(cell.State) > rank(prev.State) {
				g.cells[img.Reference][n.Name] = cell
			}
		}
	}
	return ro
}

// nodeCell is the state of image img (container ct) on node n for the
// DaemonSet key: its live form (nil when not in the cluster), why its
// placement excludes n ("" when it does not), and its pods on n. The cell
// names the node, and the DaemonSet unless the node's own image list
// decided it.
func (ev *evaluator) nodeCell(key string, n *corev1.Node, why string, live *appsv1.DaemonSet, pod []*corev1.Pod, ct container, img *Image) NodeImage {
	var cell NodeImage
	switch {
	case live == nil:
		if why != "" {
			cell = NodeImage{State: NotScheduled, Reason: reasonOf(why), Message: why}
		} else {
			cell = NodeImage{State: Failed, Reason: "NotInCluster", Message: fmt.Sprintf("DaemonSet %s is not in the cluster: apply the rendered profile", key)}
		}
	case why != "" && len(pod) == 0:
		cell = NodeImage{State: NotScheduled, Reason: reasonOf(why), Message: why}
	default:
		cell = ev.cell(n, live, pod, ct, img)
	}
	cell.Node = n.Name
	if cell.DaemonSet == "" && cell.Source != sourceNode {
		cell.DaemonSet = key
	}
	return cell
}

// summarise sums up image img from its cells (keyed by node name)
// over nodes (every node's name, sorted): Failure when it failed on a
// targeted node, Success when present on every targeted one, InProgress
// otherwise, or while a DaemonSet pulling it (unobserved) has not been
// observed by its controller, since its targeted nodes are then unknown.
func summarise(img Image, cells map[string]NodeImage, nodes []string, unobserved []string) ImageStatus {
	st := ImageStatus{Name: img.Name, Digest: img.Digest, Reference: img.Reference, Source: img.Source, Nodes: []string{}, OnNodes: []NodeImage{},
		OfflineUse: img.OfflineUse, Artifact: img.Artifact}
	var targeted, present, unverified int
	var firstFail *NodeImage
	for _, n := range nodes {
		cell, ok := cells[n]
		if !ok {
			continue
		}
		st.OnNodes = append(st.OnNodes, cell)
		if cell.State != NotScheduled {
			targeted++
		}
		switch cell.State {
		case Present:
			present++
			st.Nodes = append(st.Nodes, n)
		case Unverified:
			unverified++
		case Failed:
			if firstFail == nil {
				firstFail = &cell
			}
		}
	}
	failed := 0
	for _, cell := range st.OnNodes {
		if cell.State == Failed {
			failed++
		}
	}
	switch {
	case failed > 0:
		st.State = Failure
		st.Message = fmt.Sprintf("failed on %d of %s; %s: %s", failed, words.Count(targeted, "targeted node"), firstFail.Node, detail(*firstFail))
	case present == targeted:
		st.State = Success
		st.Message = fmt.Sprintf("present on all %s", words.Count(targeted, "targeted node"))
		if targeted == 1 {
			st.Message = "present on the 1 targeted node"
		}
		if targeted == 0 {
			st.Message = "no node is targeted by the DaemonSets that pull this image"
		}
	case unverified > 0:
		// Mounted, but no digest could be read back: not a success.
		st.State = InProgress
		st.Message = fmt.Sprintf("present on %d of %s; mounted on %d more, whose digest the cluster does not report", present, words.Count(targeted, "targeted node"), unverified)
	default:
		st.State = InProgress
		st.Message = fmt.Sprintf("present on %d of %s", present, words.Count(targeted, "targeted node"))
	}
	// Which nodes are targeted is not known while the controller has
	// not observed a DaemonSet: zero targeted nodes, or all present,
	// may be a stale picture.
	if len(unobserved) > 0 && st.State == Success {
		slices.Sort(unobserved)
		st.State = InProgress
		st.Message = fmt.Sprintf("DaemonSet %s not yet observed by its controller (status.observedGeneration behind metadata.generation); present on %d of %s so far",
			strings.Join(unobserved, ", "), present, words.Count(targeted, "targeted node"))
	}
	return st
}

// nodeGroups reports, for each node label value that chooses img, the
// nodes (sorted by name) carrying it and those of them where st says the
// image is present; nil when no node label chooses img.
func nodeGroups(img Image, st ImageStatus, nodes []corev1.Node) []v1alpha1.NodeGroup {
	var out []v1alpha1.NodeGroup
	for _, lv := range img.NodeGroups {
		ng := v1alpha1.NodeGroup{Label: lv.Label, Value: lv.Value, Nodes: []string{}, Holding: []string{}}
		for _, n := range nodes {
			if v, ok := n.Labels[lv.Label]; !ok || v != lv.Value {
				continue
			}
			ng.Nodes = append(ng.Nodes, n.Name)
			if slices.Contains(st.Nodes, n.Name) {
				ng.Holding = append(ng.Holding, n.Name)
			}
		}
		out = append(out, ng)
	}
	return out
}

// rank orders states for merging several DaemonSets' view of one image on
// one node: the most telling wins.
func rank(s State) int {
	switch s {
	case Failed:
		return 4
	case Present:
		return 3
	case Unverified:
		return 2
	case Pulling:
		return 1
	default:
		return 0
	}
}

// detail is "reason: message", or the one that is set.
func detail(c NodeImage) string {
	switch {
	case c.Reason != "" && c.Message != "":
		return c.Reason + ": " + c.Message
	case c.Reason != "":
		return c.Reason
	default:
		return c.Message
	}
}

// reasonOf names an exclusion: "Taint" or "NodeSelector" (affinity too).
func reasonOf(why string) string {
	if strings.HasPrefix(why, "taint ") {
		return "Taint"
	}
	return "NodeSelector"
}

// rollout reads a DaemonSet's rollout against its rendered form.
func rollout(rendered, live *appsv1.DaemonSet) Rollout {
	r := Rollout{Namespace: rendered.Namespace, Name: rendered.Name}
	if live == nil {
		r.Message = "not in the cluster: apply the rendered profile"
		return r
	}
	r.InCluster = true
	r.Observed = live.Status.ObservedGeneration >= live.Generation
	want := rendered.Spec.Template.Annotations[imagesHashAnnotation]
	r.Current = want != "" && live.Spec.Template.Annotations[imagesHashAnnotation] == want
	s := live.Status
	r.Desired, r.Updated, r.Ready, r.Available = s.DesiredNumberScheduled, s.UpdatedNumberScheduled, s.NumberReady, s.NumberAvailable
	var msgs []string
	if !r.Current {
		msgs = append(msgs, "the cluster's pod template pins other images than this render: apply the rendered profile")
	}
	if !r.Observed {
		msgs = append(msgs, fmt.Sprintf("generation %d not yet observed by the DaemonSet controller (observed %d)", live.Generation, s.ObservedGeneration))
	}
	if r.Updated < r.Desired {
		msgs = append(msgs, fmt.Sprintf("%d of %d pods updated", r.Updated, r.Desired))
	}
	if r.Ready < r.Desired {
		msgs = append(msgs, fmt.Sprintf("%d of %d pods ready", r.Ready, r.Desired))
	}
	r.Message = strings.Join(msgs, "; ")
	return r
}

// placement decides which nodes a DaemonSet's pods run on, as the
// DaemonSet controller does: the pod template's nodeSelector and required
// node affinity, and its tolerations plus the daemon pods' defaults against
// the node's NoSchedule and NoExecute taints.
type placement struct {
	affinity    nodeaffinity.RequiredNodeAffinity
	selector    map[string]string
	nodeName    string
	tolerations []corev1.Toleration
}

func newPlacement(ds *appsv1.DaemonSet) placement {
	spec := ds.Spec.Template.Spec
	tols := append(slices.Clone(spec.Tolerations), daemonTolerations...)
	if spec.HostNetwork {
		tols = append(tols, corev1.Toleration{Key: corev1.TaintNodeNetworkUnavailable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule})
	}
	return placement{
		affinity:    nodeaffinity.NewRequiredNodeAffinity(spec.NodeSelector, spec.Affinity),
		selector:    spec.NodeSelector,
		nodeName:    spec.NodeName,
		tolerations: tols,
	}
}

// excludes says why the DaemonSet does not run on n, or "" when it does.
func (p placement) excludes(n *corev1.Node) string {
	if p.nodeName != "" && p.nodeName != n.Name {
		return fmt.Sprintf("the pod template names node %s", p.nodeName)
	}
	if ok, err := p.affinity.Match(n); err != nil || !ok {
		for _, k := range slices.Sorted(maps.Keys(p.selector)) {
			if v, has := n.Labels[k]; !has || v != p.selector[k] {
				return fmt.Sprintf("node lacks the nodeSelector label %s=%s", k, p.selector[k])
			}
		}
		return "node does not match the pod template's required node affinity"
	}
	taint, bad := corev1helpers.FindMatchingUntoleratedTaint(klog.Background(), n.Spec.Taints, p.tolerations, func(t *corev1.Taint) bool {
		return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
	}, false)
	if bad {
		return fmt.Sprintf("taint %s not tolerated", taint.ToString())
	}
	return ""
}

// evaluator holds the cluster's objects indexed for one Evaluate.
type evaluator struct {
	c *Cluster
	// podsByOwner maps a controller UID to its pods by node name.
	podsByOwner map[string]map[string][]*corev1.Pod
	// events maps a pod UID to its events, oldest first.
	events map[string][]*corev1.Event
	// nodeImages maps a node to "repository@digest" of its status.images.
	nodeImages map[string]map[string]bool
}

func newEvaluator(c *Cluster) *evaluator {
	ev := &evaluator{c: c, podsByOwner: map[string]map[string][]*corev1.Pod{}, events: map[string][]*corev1.Event{},
		nodeImages: map[string]map[string]bool{}}
	for i := range c.Pods {
		p := &c.Pods[i]
		ref := metav1.GetControllerOf(p)
		if ref == nil || p.Spec.NodeName == "" && nodeOfDaemonPod(p) == "" {
			continue
		}
		node := p.Spec.NodeName
		if node == "" {
			node = nodeOfDaemonPod(p)
		}
		uid := string(ref.UID)
		if ev.podsByOwner[uid] == nil {
			ev.podsByOwner[uid] = map[string][]*corev1.Pod{}
		}
		ev.podsByOwner[uid][node] = append(ev.podsByOwner[uid][node], p)
	}
	for i := range c.Events {
		e := &c.Events[i]
		if e.InvolvedObject.Kind == "Pod" {
			ev.events[string(e.InvolvedObject.UID)] = append(ev.events[string(e.InvolvedObject.UID)], e)
		}
	}
	for _, es := range ev.events {
		slices.SortStableFunc(es, func(a, b *corev1.Event) int { return eventTime(a).Compare(eventTime(b)) })
	}
	for _, n := range c.Nodes {
		set := map[string]bool{}
		for _, im := range n.Status.Images {
			for _, name := range im.Names {
				if repo, dig, ok := repoDigest(name); ok {
					set[repo+"@"+dig] = true
				}
			}
		}
		ev.nodeImages[n.Name] = set
	}
	return ev
}

// nodeOfDaemonPod is the node a pending daemon pod is bound to by its
// required node affinity on metadata.name (how the DaemonSet controller
// places its pods before the scheduler binds them).
func nodeOfDaemonPod(p *corev1.Pod) string {
	a := p.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return ""
	}
	for _, t := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		for _, f := range t.MatchFields {
			if f.Key == metav1.ObjectNameField && f.Operator == corev1.NodeSelectorOpIn && len(f.Values) == 1 {
				return f.Values[0]
			}
		}
	}
	return ""
}

// eventTime is when an event last happened.
func eventTime(e *corev1.Event) time.Time {
	switch {
	case e.Series != nil && !e.Series.LastObservedTime.IsZero():
		return e.Series.LastObservedTime.Time
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	default:
		return e.CreationTimestamp.Time
	}
}

// podsOf returns the pods ds controls by node; none when ds is nil.
func (ev *evaluator) podsOf(ds *appsv1.DaemonSet) map[string][]*corev1.Pod {
	if ds == nil {
		return nil
	}
	return ev.podsByOwner[string(ds.UID)]
}

// sourceNode marks a Present state read from the node's image list.
const sourceNode = "node status.images"

// cell decides one container's image on node n, given ds's pods there.
func (ev *evaluator) cell(n *corev1.Node, ds *appsv1.DaemonSet, pods []*corev1.Pod, ct container, img *Image) NodeImage {
	if ct.Volume {
		return ev.volumeCell(n, pods, ct, img)
	}
	// The pod whose container runs this image; the newest when several
	// (a rollout in progress).
	var pod *corev1.Pod
	for _, p := range pods {
		if specImage(p, ct) == img.Reference && (pod == nil || pod.CreationTimestamp.Before(&p.CreationTimestamp)) {
			pod = p
		}
	}
	var cs *corev1.ContainerStatus
	if pod != nil {
		cs = containerStatus(pod, ct)
		if cs != nil && ev.accepts(img, cs.ImageID) {
			return NodeImage{State: Present, Source: "container status"}
		}
		if cs != nil && (cs.State.Running != nil || cs.State.Terminated != nil || cs.LastTerminationState.Terminated != nil) {
			// The runtime started the container from the pinned
			// reference, so it holds the digest, whatever form of ID it
			// reports.
			return NodeImage{State: Present, Source: "container started"}
		}
		if cs != nil && cs.State.Waiting != nil && slices.Contains(pullFailures, cs.State.Waiting.Reason) {
			// The kubelet carries the pull's error into the back-off's
			// message ("Back-off pulling image \"…\": ErrImagePull: …"),
			// except after a restart; then its last Failed event has it.
			msg := cs.State.Waiting.Message
			if e := ev.lastEvent(pod, ct, "Failed"); e != nil && !strings.Contains(msg, "\": ") {
				msg = e.Message
			}
			return NodeImage{State: Failed, Reason: cs.State.Waiting.Reason, Message: msg}
		}
	}
	if ev.nodeHas(n.Name, img) {
		return NodeImage{State: Present, Source: sourceNode}
	}
	if pod == nil {
		if len(pods) > 0 {
			return NodeImage{State: Pulling, Reason: "OldTemplate",
				Message: "the DaemonSet's pod on this node pins other images; waiting for the rollout"}
		}
		return NodeImage{State: Pulling, Reason: "NoPod", Message: "no pod of the DaemonSet on this node yet"}
	}
	if c := podCondition(pod, corev1.PodScheduled); c != nil && c.Status == corev1.ConditionFalse {
		return NodeImage{State: Failed, Reason: c.Reason, Message: c.Message}
	}
	if blocker := failingInit(pod, ct); blocker != "" {
		return NodeImage{State: Pulling, Reason: "Waiting", Message: blocker}
	}
	if e := ev.lastEvent(pod, ct, "Pulling"); e != nil {
		return NodeImage{State: Pulling, Reason: "Pulling", Message: e.Message}
	}
	reason := "Waiting"
	if cs != nil && cs.State.Waiting != nil && cs.State.Waiting.Reason != "" {
		reason = cs.State.Waiting.Reason
	}
	return NodeImage{State: Pulling, Reason: reason, Message: "not pulled yet"}
}

// sourceVolume marks a Present state read from an image volume's digest
// in pod status.
const sourceVolume = "volume status"

// volumeCell decides an artifact, image volume ct of ds's pods, on node n.
// The kubelet pulls every image volume of a pod before it starts the
// first container, and reports a failed pull on each container that
// mounts the volume; where the ImageVolumeWithDigest feature gate is on,
// the status of each container mounting it carries the digest mounted
// (volumeMounts[].volumeStatus.image.imageRef). Present needs that digest,
// or the node's status.images listing the artifact; a started container
// that mounts it without either is Unverified, never Present.
func (ev *evaluator) volumeCell(n *corev1.Node, pods []*corev1.Pod, ct container, img *Image) NodeImage {
	var pod *corev1.Pod
	for _, p := range pods {
		if volumeImage(p, ct.Name) == img.Reference && (pod == nil || pod.CreationTimestamp.Before(&p.CreationTimestamp)) {
			pod = p
		}
	}
	var mounted bool
	var failed *corev1.ContainerStatus
	if pod != nil {
		for _, cs := range slices.Concat(pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses) {
			if !mounts(pod, cs.Name, ct.Name) {
				continue
			}
			for _, vm := range cs.VolumeMounts {
				if vm.Name == ct.Name && vm.VolumeStatus != nil && vm.VolumeStatus.Image != nil && ev.acceptsVolume(img, vm.VolumeStatus.Image.ImageRef) {
					return NodeImage{State: Present, Source: sourceVolume}
				}
			}
			if cs.State.Running != nil || cs.State.Terminated != nil || cs.LastTerminationState.Terminated != nil {
				mounted = true
			}
			if w := cs.State.Waiting; w != nil && slices.Contains(pullFailures, w.Reason) && failed == nil {
				failed = &cs
			}
		}
	}
	if ev.nodeHas(n.Name, img) {
		return NodeImage{State: Present, Source: sourceNode}
	}
	switch {
	case failed != nil:
		return NodeImage{State: Failed, Reason: failed.State.Waiting.Reason, Message: failed.State.Waiting.Message}
	case mounted:
		return NodeImage{State: Unverified, Reason: "DigestNotReported",
			Message: "the pod mounting the artifact started, but neither its status nor the node's status.images names the digest on the node"}
	case pod == nil && len(pods) > 0:
		return NodeImage{State: Pulling, Reason: "OldTemplate",
			Message: "the DaemonSet's pod on this node pins other images; waiting for the rollout"}
	case pod == nil:
		return NodeImage{State: Pulling, Reason: "NoPod", Message: "no pod of the DaemonSet on this node yet"}
	}
	if c := podCondition(pod, corev1.PodScheduled); c != nil && c.Status == corev1.ConditionFalse {
		return NodeImage{State: Failed, Reason: c.Reason, Message: c.Message}
	}
	return NodeImage{State: Pulling, Reason: "Waiting", Message: "not mounted yet"}
}

// volumeImage is the reference of pod's image volume name, or "".
func volumeImage(p *corev1.Pod, name string) string {
	for _, v := range p.Spec.Volumes {
		if v.Name == name && v.Image != nil {
			return v.Image.Reference
		}
	}
	return ""
}

// mounts says whether pod's container (or init container) named c mounts
// volume v.
func mounts(p *corev1.Pod, c, v string) bool {
	for _, ct := range slices.Concat(p.Spec.InitContainers, p.Spec.Containers) {
		if ct.Name != c {
			continue
		}
		for _, m := range ct.VolumeMounts {
			if m.Name == v {
				return true
			}
		}
	}
	return false
}

// acceptsVolume says whether an image volume's imageRef names an accepted
// digest of img: "repo@sha256:…" (the repository must match) or a bare
// "sha256:…" equal to an accepted manifest digest. A bare digest that is
// none of them (a runtime's image ID, the digest of the image's config)
// proves nothing.
func (ev *evaluator) acceptsVolume(img *Image, ref string) bool {
	if _, rest, found := strings.Cut(ref, "://"); found {
		ref = rest
	}
	if slices.Contains(img.Accept, ref) {
		return true
	}
	return ev.accepts(img, ref)
}

// specImage is the image pod's container named like ct runs.
func specImage(p *corev1.Pod, ct container) string {
	list := p.Spec.Containers
	if ct.Init {
		list = p.Spec.InitContainers
	}
	for _, c := range list {
		if c.Name == ct.Name {
			return c.Image
		}
	}
	return ""
}

// containerStatus is the status of pod's container named like ct, or nil.
func containerStatus(p *corev1.Pod, ct container) *corev1.ContainerStatus {
	list := p.Status.ContainerStatuses
	if ct.Init {
		list = p.Status.InitContainerStatuses
	}
	for i := range list {
		if list[i].Name == ct.Name {
			return &list[i]
		}
	}
	return nil
}

func podCondition(p *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == t {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// failingInit names an init container before ct that failed to pull and
// so holds ct back ("waiting for init container pull-x: ImagePullBackOff"),
// or "".
func failingInit(p *corev1.Pod, ct container) string {
	for _, c := range p.Spec.InitContainers {
		if ct.Init && c.Name == ct.Name {
			return ""
		}
		cs := containerStatus(p, container{Name: c.Name, Init: true})
		if cs != nil && cs.State.Waiting != nil && slices.Contains(pullFailures, cs.State.Waiting.Reason) {
			return fmt.Sprintf("waiting for init container %s: %s", c.Name, cs.State.Waiting.Reason)
		}
	}
	return ""
}

// lastEvent is the newest event with reason about pod's container ct
// (involvedObject.fieldPath spec.initContainers{name} or
// spec.containers{name}), or nil.
func (ev *evaluator) lastEvent(p *corev1.Pod, ct container, reason string) *corev1.Event {
	field := "spec.containers{" + ct.Name + "}"
	if ct.Init {
		field = "spec.initContainers{" + ct.Name + "}"
	}
	es := ev.events[string(p.UID)]
	for i := len(es) - 1; i >= 0; i-- {
		if es[i].Reason == reason && es[i].InvolvedObject.FieldPath == field {
			return es[i]
		}
	}
	return nil
}

// accepts says whether an imageID ("repo@sha256:…", possibly behind a
// scheme such as docker-pullable://) names an accepted digest of img.
func (ev *evaluator) accepts(img *Image, imageID string) bool {
	repo, dig, ok := repoDigest(imageID)
	return ok && repo == img.Repository && slices.Contains(img.Accept, dig)
}

// nodeHas says whether node lists an accepted digest of img.
func (ev *evaluator) nodeHas(node string, img *Image) bool {
	for _, d := range img.Accept {
		if ev.nodeImages[node][img.Repository+"@"+d] {
			return true
		}
	}
	return false
}

// repoDigest parses "repo@sha256:…" (a node image name or a container
// status imageID) into the normalised repository and the digest.
func repoDigest(s string) (repo, digest string, ok bool) {
	if _, rest, found := strings.Cut(s, "://"); found {
		s = rest
	}
	ref, err := imageref.Parse(s)
	if err != nil || ref.Digest == "" {
		return "", "", false
	}
	return imageref.RepositoryName(ref.Repository), ref.Digest, true
}

// notesFor explains why a state on node n other than Present may rest on
// incomplete sources.
func (ev *evaluator) notesFor(n *corev1.Node, pods []*corev1.Pod) []string {
	var out []string
	if len(n.Status.Images) >= NodeStatusMaxImages {
		out = append(out, fmt.Sprintf("node %s lists %d images, the kubelet's default nodeStatusMaxImages cap (%d): an image missing from that list may still be on the node",
			n.Name, len(n.Status.Images), NodeStatusMaxImages))
	}
	for _, p := range pods {
		if ev.c.Now.Sub(p.CreationTimestamp.Time) > EventTTL {
			out = append(out, fmt.Sprintf("pod %s/%s on node %s is older than the API server's event TTL (--event-ttl, default %v): its earlier events are gone, reasons come from container statuses",
				p.Namespace, p.Name, n.Name, EventTTL))
		}
	}
	return out
}

// Scrub replaces every string of r with scrub's result (a credential
// scrubber: what a hostile API server sends may echo the token in a node
// name, a reason or a message). The OfflineUse summaries, which come from
// the config and are shared with the plan, are left as they are.
func Scrub(r *Report, scrub func(string) string) {
	all := func(ss []string) {
		for i := range ss {
			ss[i] = scrub(ss[i])
		}
	}
	r.Profile = scrub(r.Profile)
	all(r.Nodes)
	all(r.Sources.Notes)
	for i := range r.Images {
		im := &r.Images[i]
		for _, s := range []*string{&im.Name, &im.State, &im.Message, &im.Digest, &im.Reference, &im.Source} {
			*s = scrub(*s)
		}
		all(im.Nodes)
		for j := range im.OnNodes {
			c := &im.OnNodes[j]
			for _, s := range []*string{&c.Node, &c.Reason, &c.Message, &c.DaemonSet, &c.Source} {
				*s = scrub(*s)
			}
		}
	}
	for i := range r.DaemonSets {
		d := &r.DaemonSets[i]
		for _, s := range []*string{&d.Namespace, &d.Name, &d.Message} {
			*s = scrub(*s)
		}
	}
	for i := range r.DiskBudget {
		for j := range r.DiskBudget[i].Nodes {
			n := &r.DiskBudget[i].Nodes[j]
			n.Node = scrub(n.Node)
			all(n.Unknown)
		}
	}
}
