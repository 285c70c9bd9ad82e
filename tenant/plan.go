package tenant

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"

	"github.com/cubestudio/cube"
	kueue "github.com/cubestudio/cube/internal/kueue/v1beta2"
)

// Verdict is what Kueue would do now with a workload Plan was given.
type Verdict string

// The verdicts of a Plan.
const (
	// Admissible: Kueue admits it now, on the flavors the Admission
	// names, borrowing what Borrowed says from the cohort.
	Admissible Verdict = "Admissible"
	// Waits: its ClusterQueue could hold it, but not with what is in use
	// now; it queues until workloads finish, or Kueue preempts for it
	// (MayPreempt). Short says what it waits for.
	Waits Verdict = "Waits"
	// Inadmissible: Kueue cannot admit it as it is, however long it
	// waits: no such LocalQueue, a ClusterQueue that is not active or
	// does not take its namespace, a resource or a node selection no
	// flavor covers, or more than the ClusterQueue can ever hold.
	Inadmissible Verdict = "Inadmissible"
	// NotQueued: it carries no LocalQueue label (LocalQueue on the
	// builder), so Kueue leaves it alone and it starts at once, outside
	// the quota of the ClusterQueue.
	NotQueued Verdict = "NotQueued"
	// Unplanned: cube cannot tell its pods before it is submitted (a
	// TrainJob's pods follow its runtime).
	Unplanned Verdict = "Unplanned"
)

// Admission is Kueue's answer for one Kueue Workload of a planned
// workload, computed from the ClusterQueues' quota and use without
// applying anything. An object Kueue admits in parts has one Admission
// per part: each pod of a Deployment, each group of a LeaderWorkerSet.
type Admission struct {
	// Object is the object Kueue would make the Workload for.
	Object cube.ObjectRef
	// Part and Parts number the Workloads of an object Kueue admits in
	// parts (the third pod of a Deployment of four: 3 and 4); 1 and 1
	// else.
	Part, Parts int
	// LocalQueue is the queue its label names; ClusterQueue and Cohort
	// those it leads to ("" when unknown).
	LocalQueue, ClusterQueue, Cohort string
	Verdict                          Verdict
	// PodSets are its groups of identical pods and, once a flavor was
	// found for them, the flavor of each resource.
	PodSets []PodSetFlavors
	// Borrowed is what admitting it would borrow from the cohort, per
	// flavor and resource.
	Borrowed []Amount
	// Short is what it waits for (Waits) or can never have
	// (Inadmissible), per flavor and resource.
	Short []Shortage
	// MayPreempt says that Kueue will look for admitted workloads to
	// preempt for it: its ClusterQueue's own quota would hold it (quota
	// it lent is reclaimed, workloads of lower priority in the queue
	// are preempted, as the ClusterQueue's preemption policy allows), or
	// its policy lets a borrowing workload preempt.
	MayPreempt bool
	// Message says it in a sentence.
	Message string
}

// PodSetFlavors is a pod set of a Workload and the flavor Kueue would
// give each of its resources.
type PodSetFlavors struct {
	Name    string
	Count   int32
	Flavors map[corev1.ResourceName]string
}

// Amount is a quantity of a resource on a flavor.
type Amount struct {
	Flavor   string
	Resource corev1.ResourceName
	Quantity resource.Quantity
}

// Shortage is a resource on a flavor that a Workload needs more of:
// Needed (its pods, with those of its other pod sets on the flavor),
// Free (what the ClusterQueue and its cohort have unused now) and Most
// (what the ClusterQueue could have with nothing else admitted,
// borrowing as its limits allow).
type Shortage struct {
	Flavor             string
	Resource           corev1.ResourceName
	Needed, Free, Most resource.Quantity
}

// String reads "nvidia.com/gpu 2 on cube-t4".
func (x Amount) String() string {
	return fmt.Sprintf("%s %s on %s", x.Resource, x.Quantity.String(), x.Flavor)
}

// String reads "nvidia.com/gpu on flavor cube-t4 (needs 2, 0 free now,
// at most 4)".
func (s Shortage) String() string {
	return fmt.Sprintf("%s on flavor %s (needs %s, %s free now, at most %s)", s.Resource, s.Flavor, s.Needed.String(), s.Free.String(), s.Most.String())
}

// String reads "PyTorchJob.kubeflow.org team-a/sft: Waits: waits in
// ClusterQueue team-a for …".
func (a Admission) String() string {
	what := a.Object.String()
	if a.Parts > 1 {
		what += fmt.Sprintf(" (part %d of %d)", a.Part, a.Parts)
	}
	return what + ": " + string(a.Verdict) + ": " + a.Message
}

// kueueState is what Kueue's admission of a namespace's workloads
// depends on, as read from the cluster (Plan reads it).
type kueueState struct {
	// namespaces are the labels of the namespaces of the workloads.
	namespaces map[string]map[string]string
	// localQueues by namespace and name; a missing one does not exist.
	localQueues map[string]map[string]*kueue.LocalQueue
	// clusterQueues are all of the cluster's ClusterQueues, by name.
	clusterQueues map[string]*kueue.ClusterQueue
	flavors       map[string]*kueue.ResourceFlavor
	// limitRanges by namespace: their container defaults apply to the
	// pods, as Kueue applies them to a Workload's pod sets.
	limitRanges map[string][]corev1.LimitRange
}

// flavorResource is a resource of a flavor, Kueue's FlavorResource.
type flavorResource struct {
	flavor   string
	resource corev1.ResourceName
}

// quotaNode is a ClusterQueue's quota and use of each flavorResource,
// in Kueue's units (resources.ResourceValue: millicores for CPU, the
// value for the rest).
type quotaNode struct {
	cq        *kueue.ClusterQueue
	nominal   map[flavorResource]int64
	borrowing map[flavorResource]int64 // absent: no limit
	lending   map[flavorResource]int64 // absent: no limit
	usage     map[flavorResource]int64
}

// snapshot is the quota and use of every ClusterQueue, which plan
// updates as it admits workloads one after the other.
type snapshot map[string]*quotaNode

func newSnapshot(cqs map[string]*kueue.ClusterQueue) snapshot {
	s := snapshot{}
	for name, cq := range cqs {
		n := &quotaNode{cq: cq, nominal: map[flavorResource]int64{}, borrowing: map[flavorResource]int64{},
			lending: map[flavorResource]int64{}, usage: map[flavorResource]int64{}}
		for _, g := range cq.Spec.ResourceGroups {
			for _, f := range g.Flavors {
				for _, rq := range f.Resources {
					fr := flavorResource{string(f.Name), rq.Name}
					n.nominal[fr] = value(rq.Name, rq.NominalQuota)
					if rq.BorrowingLimit != nil {
						n.borrowing[fr] = value(rq.Name, *rq.BorrowingLimit)
					}
					if rq.LendingLimit != nil {
						n.lending[fr] = value(rq.Name, *rq.LendingLimit)
					}
				}
			}
		}
		// Kueue counts what is reserved, admitted or not yet
		// (flavorsReservation; pkg/cache/scheduler keeps usage per
		// reservation).
		for _, f := range cq.Status.FlavorsReservation {
			for _, ru := range f.Resources {
				n.usage[flavorResource{string(f.Name), ru.Name}] = value(ru.Name, ru.Total)
			}
		}
		s[name] = n
	}
	return s
}

// value is a quantity in Kueue's units (pkg/resources/requests.go,
// ResourceValue).
func value(name corev1.ResourceName, q resource.Quantity) int64 {
	if name == corev1.ResourceCPU {
		return q.MilliValue()
	}
	return q.Value()
}

// quantity is the inverse of value.
func quantityOf(name corev1.ResourceName, v int64) resource.Quantity {
	switch {
	case name == corev1.ResourceCPU:
		return *resource.NewMilliQuantity(v, resource.DecimalSI)
	case name == corev1.ResourceMemory || strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix) || name == corev1.ResourceEphemeralStorage:
		return *resource.NewQuantity(v, resource.BinarySI)
	}
	return *resource.NewQuantity(v, resource.DecimalSI)
}

// The arithmetic of Kueue v0.17.0 pkg/cache/scheduler/resource_node.go
// for a ClusterQueue in a cohort without a parent or quota of its own
// (the cohorts cube's tenants make).

// localQuota is what the ClusterQueue keeps from its cohort: its nominal
// quota beyond its lending limit.
func (s snapshot) localQuota(n *quotaNode, fr flavorResource) int64 {
	if l, ok := n.lending[fr]; ok {
		return max(0, n.nominal[fr]-l)
	}
	return 0
}

// members are the ClusterQueues of n's cohort, n included.
func (s snapshot) members(n *quotaNode) []*quotaNode {
	var out []*quotaNode
	for _, name := range slices.Sorted(maps.Keys(s)) {
		if m := s[name]; m.cq.Spec.CohortName == n.cq.Spec.CohortName {
			out = append(out, m)
		}
	}
	return out
}

// cohortAvailable is what the cohort has unused: the quota its members
// lend less what they use beyond what they keep.
func (s snapshot) cohortAvailable(n *quotaNode, fr flavorResource) (subtree, available int64) {
	var usage int64
	for _, m := range s.members(n) {
		subtree += m.nominal[fr] - s.localQuota(m, fr)
		usage += max(0, m.usage[fr]-s.localQuota(m, fr))
	}
	return subtree, subtree - usage
}

// available is resource_node.go available: what n can use now.
func (s snapshot) available(n *quotaNode, fr flavorResource) int64 {
	if n.cq.Spec.CohortName == "" {
		return n.nominal[fr] - n.usage[fr]
	}
	_, parent := s.cohortAvailable(n, fr)
	if b, ok := n.borrowing[fr]; ok {
		stored := n.nominal[fr] - s.localQuota(n, fr)
		used := max(0, n.usage[fr]-s.localQuota(n, fr))
		parent = min(stored-used+b, parent)
	}
	return max(0, s.localQuota(n, fr)-n.usage[fr]) + parent
}

// potentialAvailable is resource_node.go potentialAvailable: what n could
// use with nothing admitted.
func (s snapshot) potentialAvailable(n *quotaNode, fr flavorResource) int64 {
	if n.cq.Spec.CohortName == "" {
		return n.nominal[fr]
	}
	subtree, _ := s.cohortAvailable(n, fr)
	most := s.localQuota(n, fr) + subtree
	if b, ok := n.borrowing[fr]; ok {
		most = min(n.nominal[fr]+b, most)
	}
	return most
}

// mode is how a flavor can take a pod set's resources: Kueue's
// FlavorAssignmentMode.
type mode int

const (
	noFit mode = iota
	preempt
	fit
)

// plan answers for each Workload in turn, admitting the Admissible ones
// into the snapshot so that the next see their use, as Kueue would admit
// them one after the other.
func plan(st *kueueState, ws []kueueWorkload) []Admission {
	snap := newSnapshot(st.clusterQueues)
	out := make([]Admission, 0, len(ws))
	for _, w := range ws {
		out = append(out, planOne(st, snap, w))
	}
	return out
}

func planOne(st *kueueState, snap snapshot, w kueueWorkload) Admission {
	a := Admission{Object: w.object, Part: w.index, Parts: w.of, LocalQueue: w.localQueue}
	for _, ps := range w.podSets {
		a.PodSets = append(a.PodSets, PodSetFlavors{Name: ps.Name, Count: ps.Count})
	}
	switch {
	case w.unplanned != "":
		a.Verdict, a.Message = Unplanned, w.unplanned
		return a
	case w.localQueue == "":
		a.Verdict, a.Message = NotQueued, "it carries no "+kueueQueueLabel+" label: Kueue leaves it alone and it starts outside the ClusterQueue's quota"
		return a
	}
	ns := w.object.Namespace
	lq := st.localQueues[ns][w.localQueue]
	if lq == nil {
		a.Verdict, a.Message = Inadmissible, fmt.Sprintf("LocalQueue %s does not exist in namespace %s", w.localQueue, ns)
		return a
	}
	a.ClusterQueue = string(lq.Spec.ClusterQueue)
	node := snap[a.ClusterQueue]
	if node == nil {
		a.Verdict, a.Message = Inadmissible, fmt.Sprintf("LocalQueue %s points at ClusterQueue %s, which does not exist", w.localQueue, a.ClusterQueue)
		return a
	}
	cq := node.cq
	a.Cohort = string(cq.Spec.CohortName)
	if c := meta.FindStatusCondition(cq.Status.Conditions, kueue.ClusterQueueActive); c == nil || c.Status != metav1.ConditionTrue {
		why := "Kueue has not activated it"
		if c != nil {
			why = c.Reason + ": " + c.Message
		}
		a.Verdict, a.Message = Inadmissible, fmt.Sprintf("ClusterQueue %s is not active (%s)", cq.Name, why)
		return a
	}
	if cq.Spec.NamespaceSelector != nil {
		sel, err := metav1.LabelSelectorAsSelector(cq.Spec.NamespaceSelector)
		if err != nil || !sel.Matches(labels.Set(st.namespaces[ns])) {
			a.Verdict, a.Message = Inadmissible, fmt.Sprintf("ClusterQueue %s does not take workloads of namespace %s (its namespaceSelector)", cq.Name, ns)
			return a
		}
	}

	// Each pod set's requests, all its pods together, in Kueue's units.
	requests := make([]map[corev1.ResourceName]int64, len(w.podSets))
	for i, ps := range w.podSets {
		requests[i] = map[corev1.ResourceName]int64{}
		for r, q := range podRequests(ps.Template.Spec, st.limitRanges[ns]) {
			requests[i][r] = value(r, q) * int64(ps.Count)
		}
		if groupOf(cq, corev1.ResourcePods) != nil {
			requests[i][corev1.ResourcePods] = int64(ps.Count)
		}
	}

	assumed := map[flavorResource]int64{} // this workload's use, pod set after pod set
	worst := fit
	var reasons []string
	for i, ps := range w.podSets {
		a.PodSets[i].Flavors = map[corev1.ResourceName]string{}
		for _, r := range slices.Sorted(maps.Keys(requests[i])) {
			if _, done := a.PodSets[i].Flavors[r]; done {
				continue
			}
			g := groupOf(cq, r)
			if g == nil {
				if requests[i][r] == 0 {
					continue // flavorassigner.go skips a zero request the ClusterQueue does not cover
				}
				worst = noFit
				reasons = append(reasons, fmt.Sprintf("pod set %s: resource %s is not in ClusterQueue %s", ps.Name, r, cq.Name))
				continue
			}
			flavors, m, short, why := assignGroup(st, snap, node, g, ps, requests[i], assumed)
			for res, f := range flavors {
				a.PodSets[i].Flavors[res] = f
				assumed[flavorResource{f, res}] += requests[i][res]
			}
			if flavors == nil {
				// Mark the group's resources as tried.
				for _, res := range g.CoveredResources {
					if _, ok := requests[i][res]; ok {
						a.PodSets[i].Flavors[res] = ""
					}
				}
			}
			a.Short = append(a.Short, short...)
			reasons = append(reasons, prefixed("pod set "+ps.Name+": ", why)...)
			if m < worst {
				worst = m
			}
			if m == preempt && mayPreempt(cq, node, short) {
				a.MayPreempt = true
			}
		}
		for r, f := range a.PodSets[i].Flavors {
			if f == "" {
				delete(a.PodSets[i].Flavors, r)
			}
		}
	}

	switch worst {
	case fit:
		a.Verdict = Admissible
		for _, fr := range slices.SortedFunc(maps.Keys(assumed), compareFR) {
			before := max(0, node.usage[fr]-node.nominal[fr])
			after := max(0, node.usage[fr]+assumed[fr]-node.nominal[fr])
			if after > before {
				a.Borrowed = append(a.Borrowed, Amount{Flavor: fr.flavor, Resource: fr.resource, Quantity: quantityOf(fr.resource, after-before)})
			}
			node.usage[fr] += assumed[fr]
		}
		a.Short = nil
		a.Message = admittedMessage(a)
	case preempt:
		a.Verdict = Waits
		a.Message = "waits in ClusterQueue " + cq.Name + " for " + shortMessage(a.Short)
		if a.MayPreempt {
			a.Message += "; Kueue looks for workloads to preempt for it"
		}
	default:
		a.Verdict = Inadmissible
		a.MayPreempt = false
		a.Message = strings.Join(reasons, "; ")
	}
	return a
}

func prefixed(p string, ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = p + s
	}
	return out
}

func compareFR(a, b flavorResource) int {
	if c := strings.Compare(a.flavor, b.flavor); c != 0 {
		return c
	}
	return strings.Compare(string(a.resource), string(b.resource))
}

// mayPreempt is flavorassigner.go fitsResourceQuota's condition for
// looking for workloads to preempt: the ClusterQueue's nominal quota
// holds what is short, or its policy lets a borrowing workload preempt
// (BorrowWithinCohort). Fair sharing's own preemption is a setting of
// Kueue's configuration, which cube does not read.
func mayPreempt(cq *kueue.ClusterQueue, n *quotaNode, short []Shortage) bool {
	if p := cq.Spec.Preemption; p != nil && p.BorrowWithinCohort != nil && p.BorrowWithinCohort.Policy != kueue.BorrowWithinCohortPolicyNever && p.BorrowWithinCohort.Policy != "" {
		return true
	}
	for _, s := range short {
		if value(s.Resource, s.Needed) > n.nominal[flavorResource{s.Flavor, s.Resource}] {
			return false
		}
	}
	return len(short) > 0
}

// groupOf is the ClusterQueue's resource group that covers r.
func groupOf(cq *kueue.ClusterQueue, r corev1.ResourceName) *kueue.ResourceGroup {
	for i := range cq.Spec.ResourceGroups {
		if slices.Contains(cq.Spec.ResourceGroups[i].CoveredResources, r) {
			return &cq.Spec.ResourceGroups[i]
		}
	}
	return nil
}

// assignGroup is flavorassigner.go findFlavorForPodSets for one pod set
// and one resource group, with Kueue's default flavor fungibility
// (whenCanBorrow MayStopSearch, whenCanPreempt TryNextFlavor): the first
// flavor on which every requested resource fits, borrowing or not; else
// the first on which preemption could make room; else none. It returns
// the chosen flavor per resource, the mode, what is short on it and the
// reasons the other flavors were passed over.
func assignGroup(st *kueueState, snap snapshot, n *quotaNode, g *kueue.ResourceGroup, ps kueue.PodSet, requests map[corev1.ResourceName]int64, assumed map[flavorResource]int64) (map[corev1.ResourceName]string, mode, []Shortage, []string) {
	allowed := map[string]bool{}
	for _, f := range g.Flavors {
		if rf := st.flavors[string(f.Name)]; rf != nil {
			for k := range rf.Spec.NodeLabels {
				allowed[k] = true
			}
		}
	}
	var (
		best      map[corev1.ResourceName]string
		bestShort []Shortage
		reasons   []string
		allShort  []Shortage
	)
	for _, f := range g.Flavors {
		name := string(f.Name)
		rf := st.flavors[name]
		if rf == nil {
			reasons = append(reasons, "flavor "+name+" not found")
			continue
		}
		if why := flavorRefuses(rf, ps.Template.Spec, allowed); why != "" {
			reasons = append(reasons, why)
			continue
		}
		got := map[corev1.ResourceName]string{}
		m := fit
		var short []Shortage
		for _, r := range g.CoveredResources {
			req, ok := requests[r]
			if !ok {
				continue
			}
			fr := flavorResource{name, r}
			val := assumed[fr] + req
			free, most := snap.available(n, fr), snap.potentialAvailable(n, fr)
			switch {
			case val > most:
				m = noFit
				short = append(short, Shortage{Flavor: name, Resource: r, Needed: quantityOf(r, val), Free: quantityOf(r, max(free, 0)), Most: quantityOf(r, most)})
			case val > free:
				m = min(m, preempt)
				short = append(short, Shortage{Flavor: name, Resource: r, Needed: quantityOf(r, val), Free: quantityOf(r, max(free, 0)), Most: quantityOf(r, most)})
			}
			got[r] = name
		}
		switch m {
		case fit:
			return got, fit, nil, nil
		case preempt:
			if best == nil {
				best, bestShort = got, short
			}
		default:
			allShort = append(allShort, short...)
			for _, s := range short {
				reasons = append(reasons, fmt.Sprintf("%s on flavor %s: needs %s, the ClusterQueue can have at most %s", s.Resource, s.Flavor, s.Needed.String(), s.Most.String()))
			}
		}
	}
	if best != nil {
		return best, preempt, bestShort, nil
	}
	if len(reasons) == 0 {
		reasons = []string{"the ClusterQueue has no flavor for " + strings.Join(resourceNames(g.CoveredResources), ", ")}
	}
	return nil, noFit, allShort, reasons
}

func resourceNames(rs []corev1.ResourceName) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = string(r)
	}
	return out
}

// flavorRefuses is flavorassigner.go checkFlavorForPodSets: a taint of the
// flavor's nodes (NoSchedule or NoExecute) the pod and the flavor do not
// tolerate, or a node selection of the pod (on the label keys of the
// group's flavors only, flavorSelector) the flavor's labels do not meet.
func flavorRefuses(rf *kueue.ResourceFlavor, spec corev1.PodSpec, allowed map[string]bool) string {
	tolerations := append(slices.Clone(spec.Tolerations), rf.Spec.Tolerations...)
	for _, taint := range rf.Spec.NodeTaints {
		if taint.Effect != corev1.TaintEffectNoSchedule && taint.Effect != corev1.TaintEffectNoExecute {
			continue
		}
		if !slices.ContainsFunc(tolerations, func(t corev1.Toleration) bool { return t.ToleratesTaint(logr.Discard(), &taint, true) }) {
			return fmt.Sprintf("untolerated taint %s in flavor %s", taint.ToString(), rf.Name)
		}
	}
	nodeLabels := labels.Set(rf.Spec.NodeLabels)
	for k, v := range spec.NodeSelector {
		if allowed[k] && nodeLabels[k] != v {
			return fmt.Sprintf("flavor %s doesn't match node affinity", rf.Name)
		}
	}
	if a := spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		matched, anyTerm := false, false
		for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
			sel := labels.NewSelector()
			kept := 0
			for _, e := range term.MatchExpressions {
				if !allowed[e.Key] {
					continue
				}
				kept++
				req, err := labels.NewRequirement(e.Key, nodeOperator(e.Operator), e.Values)
				if err != nil {
					return fmt.Sprintf("flavor %s doesn't match node affinity: %v", rf.Name, err)
				}
				sel = sel.Add(*req)
			}
			if kept == 0 {
				// A term left empty matches any flavor (flavorSelector).
				return ""
			}
			anyTerm = true
			if sel.Matches(nodeLabels) {
				matched = true
			}
		}
		if anyTerm && !matched {
			return fmt.Sprintf("flavor %s doesn't match node affinity", rf.Name)
		}
	}
	return ""
}

func nodeOperator(op corev1.NodeSelectorOperator) selection.Operator {
	switch op {
	case corev1.NodeSelectorOpIn:
		return selection.In
	case corev1.NodeSelectorOpNotIn:
		return selection.NotIn
	case corev1.NodeSelectorOpExists:
		return selection.Exists
	case corev1.NodeSelectorOpDoesNotExist:
		return selection.DoesNotExist
	case corev1.NodeSelectorOpGt:
		return selection.GreaterThan
	case corev1.NodeSelectorOpLt:
		return selection.LessThan
	}
	return selection.Operator(op)
}

func admittedMessage(a Admission) string {
	var parts []string
	for _, ps := range a.PodSets {
		byFlavor := map[string][]string{}
		for r, f := range ps.Flavors {
			byFlavor[f] = append(byFlavor[f], string(r))
		}
		var on []string
		for _, f := range slices.Sorted(maps.Keys(byFlavor)) {
			slices.Sort(byFlavor[f])
			on = append(on, f+" ("+strings.Join(byFlavor[f], ", ")+")")
		}
		if len(on) > 0 {
			parts = append(parts, fmt.Sprintf("%s ×%d on %s", ps.Name, ps.Count, strings.Join(on, ", ")))
		}
	}
	msg := "admitted now to ClusterQueue " + a.ClusterQueue
	if len(parts) > 0 {
		msg += ": " + strings.Join(parts, "; ")
	}
	if len(a.Borrowed) > 0 {
		var b []string
		for _, x := range a.Borrowed {
			b = append(b, x.String())
		}
		msg += ", borrowing " + strings.Join(b, " and ") + " from cohort " + a.Cohort
	}
	return msg
}

func shortMessage(short []Shortage) string {
	var parts []string
	for _, s := range short {
		parts = append(parts, s.String())
	}
	return strings.Join(parts, " and ")
}
