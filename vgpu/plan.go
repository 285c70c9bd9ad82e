package vgpu

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"math/bits"
	"slices"
	"sort"

	"github.com/cubestudio/cube/hardware"
)

// Demand is one request to place: a whole device, a slice, a MIG instance
// or a vNPU, for one pod.
type Demand struct {
	Name string
	Spec *Spec
}

// Policy is how Pack chooses devices.
type Policy string

// Policies Pack knows. Every policy respects the same constraints (memory,
// compute, MIG geometry, shares per device); they differ in order and
// choice.
const (
	// WholeDevice gives every demand whole devices, as a cluster without
	// sharing would.
	WholeDevice Policy = "whole-device"
	// FirstFit takes demands in order and puts each on the first device
	// (node by node) where it fits.
	FirstFit Policy = "first-fit"
	// Binpack is HAMi's binpack: demands in order, the fullest feasible node,
	// then its fullest feasible devices.
	Binpack Policy = "binpack"
	// Spread is HAMi's spread: demands in order, the emptiest node and
	// devices.
	Spread Policy = "spread"
	// Planner is this package's planner: demands largest first per device
	// type, best fit on open devices (least room left after placing, memory
	// and compute together), MIG instances placed where they keep the
	// largest aligned blocks free, then a pass that empties the least-used
	// devices into others. When a simpler policy does better on the
	// demands (see Pack), the planner returns that packing.
	Planner Policy = "planner"
)

// Policies lists every policy, the baselines first.
func Policies() []Policy { return []Policy{WholeDevice, FirstFit, Binpack, Spread, Planner} }

// DefaultMaxShares is how many slices one device holds at most: HAMi's
// default deviceSplitCount.
const DefaultMaxShares = 10

// PackOption tunes Pack.
type PackOption func(*packConfig)

type packConfig struct{ maxShares int }

// MaxShares sets how many slices (HAMi/Volcano) one device takes at most;
// n < 1 means no limit.
func MaxShares(n int) PackOption { return func(c *packConfig) { c.maxShares = n } }

// Plan is where every demand went, and what that leaves.
type Plan struct {
	Policy      Policy
	Assignments []Assignment
	Unplaced    []Unplaced
	// Devices lists every device of the inventory with what it holds.
	Devices []DeviceUsage
	Summary Summary
}

// Assignment places one demand.
type Assignment struct {
	// Demand is the index in the demands given to Pack.
	Demand int
	Name   string
	Node   string
	// Devices are device indices on the node, one per device the demand
	// touches.
	Devices []int
	// MIGStart is the first memory slice of a MIG instance, -1 otherwise.
	MIGStart int
	// Template is the vNPU template, "" otherwise.
	Template string
}

// Unplaced is a demand Pack could not place, and why.
type Unplaced struct {
	Demand int
	Name   string
	Reason string
}

// DeviceUsage is one physical device after packing.
type DeviceUsage struct {
	Node    string
	Index   int
	Profile string
	// Mode is what the device was given to: "" (free), whole, slice, mig or
	// vnpu.
	Mode        Kind
	MemoryBytes int64
	// MemoryReserved is memory taken from the device (a whole device, a
	// template, MIG memory slices); MemoryRequested is what demands asked
	// for.
	MemoryReserved, MemoryRequested int64
	// ComputeReserved and ComputeRequested are in ComputeUnits.
	ComputeReserved, ComputeRequested int
	Slices                            []SliceUse
}

// MemoryUtilisation is requested memory over the device's memory.
func (d DeviceUsage) MemoryUtilisation() float64 {
	if d.MemoryBytes == 0 {
		return 0
	}
	return float64(d.MemoryRequested) / float64(d.MemoryBytes)
}

// ComputeUtilisation is requested compute over the device's compute.
func (d DeviceUsage) ComputeUtilisation() float64 {
	return float64(d.ComputeRequested) / ComputeUnits
}

// SliceUse is one demand's share of a device.
type SliceUse struct {
	Demand                          int
	Name                            string
	Kind                            Kind
	MemoryReserved, MemoryRequested int64
	ComputeReserved                 int
	// MIGStart and MIGSlices locate a MIG instance in the 8 memory slices
	// (MIGStart -1 otherwise).
	MIGStart, MIGSlices int
	MIG, Template       string
}

// Summary is the plan in figures.
type Summary struct {
	Demands, Placed           int
	DevicesUsed, DevicesTotal int
	// LowerBound is the fewest devices the placed demands could fit on:
	// per device type, the larger of total memory and total compute over
	// one device's, rounded up, summed over types. TraceLowerBound is the
	// same over every valid demand, placed or not.
	LowerBound, TraceLowerBound int
	// MemoryUtilisation and ComputeUtilisation are requested over capacity
	// of the used devices.
	MemoryUtilisation, ComputeUtilisation float64
	// StrandedMemory is free memory left on used devices; Fragmentation is
	// that over the used devices' memory.
	StrandedMemory int64
	Fragmentation  float64
	// FreeDevices are devices left empty.
	FreeDevices int
	// PerType breaks the figures down by profile name.
	PerType map[string]TypeSummary
}

// TypeSummary is the summary of one device type.
type TypeSummary struct {
	Devices, Used, LowerBound, TraceLowerBound int
	MemoryUtilisation, ComputeUtilisation      float64
}

// need is a validated demand.
type need struct {
	idx       int
	name      string
	typ       string
	kind      Kind
	n         int
	mem, req  int64
	comp      int
	mig       hardware.MIGProfile
	migIdx    int
	tmpl      string
	shared    bool // counts against MaxShares
	devMemory int64
	reason    string
}

type device struct {
	node, index int
	nodeName    string
	typ         string
	profile     *hardware.Profile
	memTotal    int64
	mode        Kind
	memUsed     int64
	memReq      int64
	compUsed    int
	compReq     int
	shares      int
	migMask     uint8
	migCompute  int
	migCount    []int
	slices      []SliceUse
	openAt      int // index in packer.open, -1 when not there
}

type packer struct {
	cfg     packConfig
	policy  Policy
	devices []*device
	byType  map[string][]*device   // in inventory order
	groups  map[string][][]*device // devices of a type, node by node
	open    map[string][]*device   // shared (non-whole, non-empty) devices of a type
	buf     []fit
	buf2    []fit
}

// Pack places demands on the devices of inv with policy. Invalid demands
// and demands that do not fit are reported in Plan.Unplaced with the
// reason; an unknown policy is an error.
func Pack(inv hardware.Inventory, demands []Demand, policy Policy, opts ...PackOption) (*Plan, error) {
	if !slices.Contains(Policies(), policy) {
		return nil, fmt.Errorf("pack: unknown policy %q", policy)
	}
	cfg := packConfig{maxShares: DefaultMaxShares}
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	base := make([]need, len(demands))
	for i, d := range demands {
		base[i] = toNeed(i, d)
	}
	order := make([]int, len(base))
	for i := range order {
		order[i] = i
	}
	var r run
	if policy != Planner {
		r = pack(inv, policy, cfg, base, order, false)
	} else {
		// Largest first, then device-by-device filling, packs tightest.
		// When the devices cannot take every demand, arrival order and
		// smallest first may place more; keep the better run (see better).
		largest := slices.Clone(order)
		sortLargestFirst(largest, base)
		r = pack(inv, policy, cfg, base, largest, true)
		if r.placed < r.valid {
			smallest := slices.Clone(largest)
			slices.Reverse(smallest)
			for _, o := range [][]int{order, smallest} {
				if alt := pack(inv, policy, cfg, base, o, false); alt.better(r) {
					r = alt
				}
			}
		}
		// Best fit is a heuristic: on some traces a simpler policy packs
		// tighter. Their runs are cheap next to the planner's and every
		// one respects the same constraints, so the planner is never
		// worse than any of them (TestPlannerNeverWorseThanBaselines).
		// Whole-device allocation never beats the sharing first fit.
		for _, baseline := range []Policy{FirstFit, Binpack, Spread} {
			if alt := pack(inv, baseline, cfg, base, order, false); alt.better(r) {
				r = alt
			}
		}
	}
	plan := &Plan{Policy: policy}
	for i := range r.needs {
		if r.assignments[i] != nil {
			plan.Assignments = append(plan.Assignments, *r.assignments[i])
		} else {
			plan.Unplaced = append(plan.Unplaced, Unplaced{Demand: i, Name: r.needs[i].name, Reason: r.needs[i].reason})
		}
	}
	plan.Devices = r.pk.usage()
	plan.Summary = summarise(r.pk, r.needs, r.assignments)
	return plan, nil
}

// run is one packing of the demands.
type run struct {
	pk            *packer
	needs         []need
	assignments   []*Assignment
	placed, valid int
	used          int
}

// better prefers more demands placed, then more device-work placed (so a
// big job is not dropped for a small one), then fewer devices used.
func (r run) better(than run) bool {
	if r.placed != than.placed {
		return r.placed > than.placed
	}
	if w, tw := r.work(), than.work(); w != tw {
		return w > tw
	}
	return r.used < than.used
}

// work is the device share of the placed demands, in ComputeUnits-sized
// shares of memory or compute, whichever is larger.
func (r run) work() int64 {
	var total int64
	for i, a := range r.assignments {
		if a == nil {
			continue
		}
		nd := r.needs[i]
		share := int64(nd.comp)
		if nd.devMemory > 0 {
			share = max(share, nd.mem*ComputeUnits/nd.devMemory)
		}
		total += share * int64(nd.n)
	}
	return total
}

// pack places needs in order with policy. With binCentric, single-device
// shares are left to fillDevices after everything else is placed.
func pack(inv hardware.Inventory, policy Policy, cfg packConfig, base []need, order []int, binCentric bool) run {
	r := run{pk: newPacker(inv, policy, cfg), needs: slices.Clone(base), assignments: make([]*Assignment, len(base))}
	var deferred []int
	for _, i := range order {
		nd := r.needs[i]
		if nd.reason != "" {
			continue
		}
		r.valid++
		if binCentric && nd.n == 1 && (nd.kind == KindSlice || nd.kind == KindVNPU) {
			deferred = append(deferred, i)
			continue
		}
		a, reason := r.pk.place(nd)
		if reason != "" {
			r.needs[i].reason = reason
			continue
		}
		r.placed++
		r.assignments[i] = a
	}
	if len(deferred) > 0 {
		r.placed += r.pk.fillDevices(r.needs, deferred, r.assignments)
	}
	if policy == Planner {
		r.pk.compact(r.needs, r.assignments)
	}
	for _, d := range r.pk.devices {
		if d.mode != "" {
			r.used++
		}
	}
	return r
}

// Compare packs the same demands with every policy.
func Compare(inv hardware.Inventory, demands []Demand, opts ...PackOption) []*Plan {
	var out []*Plan
	for _, p := range Policies() {
		plan, _ := Pack(inv, demands, p, opts...)
		out = append(out, plan)
	}
	return out
}

func toNeed(i int, d Demand) need {
	nd := need{idx: i, name: d.Name, migIdx: -1}
	if nd.name == "" {
		nd.name = fmt.Sprintf("demand-%d", i)
	}
	if d.Spec == nil {
		nd.reason = "no accelerator spec"
		return nd
	}
	shape, errs := d.Spec.demand(nil)
	if len(errs) > 0 {
		nd.reason = errs.ToAggregate().Error()
		return nd
	}
	s := d.Spec
	p := s.profile
	nd.typ = p.Name
	nd.kind = s.kind
	if s.kind == KindSlice && p.Vendor == hardware.Huawei {
		nd.kind = KindVNPU
	}
	nd.n = s.devices
	nd.mem, nd.req, nd.comp = shape.memBytes, shape.requested, shape.compute
	nd.devMemory = p.MemoryBytes
	nd.shared = nd.kind == KindSlice
	nd.tmpl = shape.tmpl.Name
	if s.kind == KindMIG {
		nd.mig = shape.mig
		for j, m := range p.MIGProfiles() {
			if m.Name == shape.mig.Name {
				nd.migIdx = j
			}
		}
	}
	return nd
}

// size orders demands for the planner: whole devices (most first), then
// by the larger of memory and compute share of a device.
func sortLargestFirst(order []int, needs []need) {
	key := func(nd need) (int, float64) {
		if nd.reason != "" {
			return 3, 0
		}
		class := 1
		if nd.kind == KindWhole {
			class = 0
		}
		return class, deviceShare(nd.mem, nd.devMemory, float64(nd.comp)/ComputeUnits) * float64(nd.n)
	}
	sort.SliceStable(order, func(a, b int) bool {
		ca, sa := key(needs[order[a]])
		cb, sb := key(needs[order[b]])
		if ca != cb {
			return ca < cb
		}
		return sa > sb
	})
}

func newPacker(inv hardware.Inventory, policy Policy, cfg packConfig) *packer {
	pk := &packer{cfg: cfg, policy: policy, byType: map[string][]*device{},
		groups: map[string][][]*device{}, open: map[string][]*device{}}
	for ni := range inv.Nodes {
		n := &inv.Nodes[ni]
		if !n.Profile.Accelerated() || n.Unschedulable || n.Devices <= 0 {
			continue
		}
		prof := n.Profile
		migs := len(prof.MIGProfiles())
		group := make([]*device, 0, n.Devices)
		for di := 0; di < n.Devices; di++ {
			d := &device{node: ni, index: di, nodeName: n.Name, typ: prof.Name, profile: &prof,
				memTotal: prof.MemoryBytes, migCount: make([]int, migs), openAt: -1}
			pk.devices = append(pk.devices, d)
			pk.byType[prof.Name] = append(pk.byType[prof.Name], d)
			group = append(group, d)
		}
		pk.groups[prof.Name] = append(pk.groups[prof.Name], group)
	}
	return pk
}

// fit is a way to put a need on one device.
type fit struct {
	dev      *device
	migStart int
}

// fits reports whether nd fits on d and where (MIG start).
func (pk *packer) fits(d *device, nd need) (fit, bool) {
	if pk.policy == WholeDevice || nd.kind == KindWhole {
		return fit{dev: d, migStart: -1}, d.mode == ""
	}
	if d.mode != "" && d.mode != nd.kind {
		return fit{}, false
	}
	switch nd.kind {
	case KindMIG:
		if nd.migIdx < 0 || d.migCount[nd.migIdx] >= nd.mig.MaxInstances ||
			d.migCompute+nd.mig.ComputeSlices > hardware.MIGComputeSlices {
			return fit{}, false
		}
		best, bestScore := -1, -1
		for _, start := range nd.mig.Placements {
			mask := sliceMask(start, nd.mig.MemorySlices)
			if mask == 0 || d.migMask&mask != 0 {
				continue
			}
			if pk.policy != Planner {
				return fit{dev: d, migStart: start}, true
			}
			if score := migFreedom(d.migMask | mask); score > bestScore {
				best, bestScore = start, score
			}
		}
		return fit{dev: d, migStart: best}, best >= 0
	default:
		if d.memUsed+nd.mem > d.memTotal || d.compUsed+nd.comp > ComputeUnits {
			return fit{}, false
		}
		if nd.shared && pk.cfg.maxShares > 0 && d.shares >= pk.cfg.maxShares {
			return fit{}, false
		}
		return fit{dev: d, migStart: -1}, true
	}
}

// sliceMask is the memory-slice bit mask of an instance; 0 when it runs
// past the card.
func sliceMask(start, n int) uint8 {
	if start < 0 || n < 1 || start+n > hardware.MIGMemorySlices {
		return 0
	}
	return uint8(((1 << n) - 1) << start)
}

// migFreedom scores a MIG memory mask by the aligned blocks it leaves free:
// a free half counts more than two free quarters, and so on.
func migFreedom(mask uint8) int {
	score := 0
	for _, blk := range []struct{ start, n, w int }{
		{0, 4, 64}, {4, 4, 64}, {0, 2, 8}, {2, 2, 8}, {4, 2, 8}, {6, 2, 8},
	} {
		if mask&sliceMask(blk.start, blk.n) == 0 {
			score += blk.w
		}
	}
	return score + 8 - bits.OnesCount8(mask)
}

// load is how full a device is, 0 to 1.
func (d *device) load() float64 {
	if d.mode == KindWhole {
		return 1
	}
	m := 0.0
	if d.memTotal > 0 {
		m = float64(d.memUsed) / float64(d.memTotal)
	}
	c := float64(d.compUsed) / ComputeUnits
	if d.mode == KindMIG {
		m = float64(bits.OnesCount8(d.migMask)) / hardware.MIGMemorySlices
		c = float64(d.migCompute) / hardware.MIGComputeSlices
	}
	return math.Max(m, c)
}

// residual is how much room is left on d after placing nd: the planner's
// best-fit score (lower is tighter).
func residual(d *device, nd need) float64 {
	if nd.kind == KindMIG {
		return 1 - float64(d.migCompute+nd.mig.ComputeSlices)/hardware.MIGComputeSlices
	}
	rm := 0.0
	if d.memTotal > 0 {
		rm = float64(d.memTotal-d.memUsed-nd.mem) / float64(d.memTotal)
	}
	rc := float64(ComputeUnits-d.compUsed-nd.comp) / ComputeUnits
	return rm*rm + rc*rc
}

// place finds devices for nd and commits them.
func (pk *packer) place(nd need) (*Assignment, string) {
	if len(pk.byType[nd.typ]) == 0 {
		return nil, fmt.Sprintf("no %s devices in the inventory", nd.typ)
	}
	var chosen []fit
	switch pk.policy {
	case Planner:
		chosen = pk.choosePlanner(nd)
	default:
		chosen = pk.chooseByNode(nd)
	}
	if chosen == nil {
		return nil, pk.whyNot(nd)
	}
	return pk.commit(nd, chosen), ""
}

// chooseByNode is first-fit, binpack and spread (and whole-device, which is
// first-fit on free devices).
func (pk *packer) chooseByNode(nd need) []fit {
	var best []fit
	bestScore := 0.0
	byLoad := pk.policy == Binpack || pk.policy == Spread
	for _, group := range pk.groups[nd.typ] {
		score := 0.0
		if byLoad {
			// A node no fuller (binpack) or emptier (spread) than the
			// best so far cannot win: skip finding its devices.
			score = nodeLoad(group)
			if best != nil && ((pk.policy == Binpack && score <= bestScore) || (pk.policy == Spread && score >= bestScore)) {
				continue
			}
		}
		fitsHere := pk.buf[:0]
		for _, d := range group {
			if f, ok := pk.fits(d, nd); ok {
				fitsHere = append(fitsHere, f)
			}
		}
		if len(fitsHere) < nd.n {
			continue
		}
		switch pk.policy {
		case Binpack:
			slices.SortStableFunc(fitsHere, func(a, b fit) int { return cmp.Compare(b.dev.load(), a.dev.load()) })
		case Spread:
			slices.SortStableFunc(fitsHere, func(a, b fit) int { return cmp.Compare(a.dev.load(), b.dev.load()) })
		}
		pk.buf = fitsHere
		fitsHere = fitsHere[:nd.n]
		if pk.policy == WholeDevice || pk.policy == FirstFit {
			return slices.Clone(fitsHere)
		}
		best, bestScore = slices.Clone(fitsHere), score
	}
	return best
}

func nodeLoad(group []*device) float64 {
	total := 0.0
	for _, d := range group {
		total += d.load()
	}
	return total / float64(len(group))
}

// choosePlanner is best fit: the tightest open devices first; a fresh
// device only when no open one fits, on the node with the most devices in
// use.
func (pk *packer) choosePlanner(nd need) []fit {
	if nd.n == 1 && nd.kind != KindWhole {
		if f, ok := pk.bestOpen(nd, nil); ok {
			return []fit{f}
		}
		// A fresh device on the busiest node that has one.
		if d := pk.freshDevice(nd.typ); d != nil {
			if f, ok := pk.fits(d, nd); ok {
				return []fit{f}
			}
		}
		return nil
	}
	var best []fit
	bestScore := math.Inf(1)
	for _, group := range pk.groups[nd.typ] {
		open, fresh := pk.buf[:0], pk.buf2[:0]
		used := 0
		for _, d := range group {
			if d.mode != "" {
				used++
			}
			if f, ok := pk.fits(d, nd); ok {
				if d.mode == "" {
					fresh = append(fresh, f)
				} else {
					open = append(open, f)
				}
			}
		}
		pk.buf, pk.buf2 = open, fresh
		if len(open)+len(fresh) < nd.n {
			continue
		}
		slices.SortStableFunc(open, func(a, b fit) int { return cmp.Compare(residual(a.dev, nd), residual(b.dev, nd)) })
		pick := append(slices.Clip(open), fresh...)[:nd.n]
		// Prefer open devices, then nodes already in use, then nodes whose
		// free devices the demand fills exactly (whole devices best fit).
		score := 0.0
		for _, f := range pick {
			if f.dev.mode == "" {
				score += 2
			} else {
				score += residual(f.dev, nd)
			}
		}
		score -= float64(used) / float64(len(group))
		if nd.kind == KindWhole {
			score += float64(len(fresh)-nd.n) / float64(len(group)+1)
		}
		if score < bestScore {
			best, bestScore = slices.Clone(pick), score
		}
	}
	return best
}

// bestOpen is the open device where nd fits tightest, skipping skip.
func (pk *packer) bestOpen(nd need, skip *device) (fit, bool) {
	var best fit
	bestScore := math.Inf(1)
	for _, d := range pk.open[nd.typ] {
		if d == skip || d.mode != nd.kind {
			continue
		}
		if nd.kind != KindMIG && (d.memUsed+nd.mem > d.memTotal || d.compUsed+nd.comp > ComputeUnits) {
			continue
		}
		if f, ok := pk.fits(d, nd); ok {
			if s := residual(d, nd); s < bestScore {
				best, bestScore = f, s
			}
		}
	}
	return best, best.dev != nil
}

func (pk *packer) markOpen(d *device) {
	if d.openAt >= 0 || d.mode == "" || d.mode == KindWhole {
		return
	}
	d.openAt = len(pk.open[d.typ])
	pk.open[d.typ] = append(pk.open[d.typ], d)
}

func (pk *packer) markClosed(d *device) {
	if d.openAt < 0 {
		return
	}
	list := pk.open[d.typ]
	last := list[len(list)-1]
	list[d.openAt] = last
	last.openAt = d.openAt
	pk.open[d.typ] = list[:len(list)-1]
	d.openAt = -1
}

func (pk *packer) whyNot(nd need) string {
	switch {
	case pk.policy == WholeDevice || nd.kind == KindWhole:
		if nd.n > 1 {
			return fmt.Sprintf("no %s node has %d free devices", nd.typ, nd.n)
		}
		return fmt.Sprintf("no free %s device", nd.typ)
	case nd.kind == KindMIG:
		return fmt.Sprintf("no %s device has a free MIG placement for %s", nd.typ, nd.mig.Name)
	case nd.n > 1:
		return fmt.Sprintf("no %s node has %d devices with %s memory and %d%% compute free", nd.typ, nd.n, formatBytes(nd.mem), nd.comp*100/ComputeUnits)
	default:
		return fmt.Sprintf("no %s device has %s memory and %d%% compute free", nd.typ, formatBytes(nd.mem), nd.comp*100/ComputeUnits)
	}
}

func (pk *packer) commit(nd need, chosen []fit) *Assignment {
	a := &Assignment{Demand: nd.idx, Name: nd.name, Node: chosen[0].dev.nodeName, MIGStart: -1, Template: nd.tmpl}
	for _, f := range chosen {
		pk.commitOne(f, nd)
		a.Devices = append(a.Devices, f.dev.index)
		if f.migStart >= 0 {
			a.MIGStart = f.migStart
		}
	}
	return a
}

func (pk *packer) commitOne(f fit, nd need) {
	d := f.dev
	use := SliceUse{Demand: nd.idx, Name: nd.name, Kind: nd.kind, MemoryRequested: nd.req,
		MIGStart: -1, Template: nd.tmpl}
	if pk.policy == WholeDevice || nd.kind == KindWhole {
		d.mode = KindWhole
		use.MemoryReserved = d.memTotal
		use.ComputeReserved = ComputeUnits
		d.memUsed, d.compUsed = d.memTotal, ComputeUnits
		d.memReq += nd.req
		d.compReq += nd.comp
		d.slices = append(d.slices, use)
		return
	}
	d.mode = nd.kind
	use.MemoryReserved, use.ComputeReserved = nd.mem, nd.comp
	d.memUsed += nd.mem
	d.memReq += nd.req
	d.compUsed += nd.comp
	d.compReq += nd.comp
	if nd.shared {
		d.shares++
	}
	if nd.kind == KindMIG {
		use.MIG, use.MIGStart, use.MIGSlices = nd.mig.Name, f.migStart, nd.mig.MemorySlices
		d.migMask |= sliceMask(f.migStart, nd.mig.MemorySlices)
		d.migCompute += nd.mig.ComputeSlices
		d.migCount[nd.migIdx]++
	}
	d.slices = append(d.slices, use)
	pk.markOpen(d)
}

// release takes demand idx off d.
func (pk *packer) release(d *device, idx int, nd need) {
	i := slices.IndexFunc(d.slices, func(s SliceUse) bool { return s.Demand == idx })
	if i < 0 {
		return
	}
	use := d.slices[i]
	d.slices = slices.Delete(d.slices, i, i+1)
	d.memUsed -= use.MemoryReserved
	d.memReq -= use.MemoryRequested
	d.compUsed -= use.ComputeReserved
	d.compReq -= nd.comp
	if nd.shared {
		d.shares--
	}
	if use.MIGStart >= 0 {
		d.migMask &^= sliceMask(use.MIGStart, use.MIGSlices)
		d.migCompute -= nd.mig.ComputeSlices
		d.migCount[nd.migIdx]--
	}
	if len(d.slices) == 0 {
		pk.markClosed(d)
		*d = device{node: d.node, index: d.index, nodeName: d.nodeName, typ: d.typ, profile: d.profile,
			memTotal: d.memTotal, migCount: make([]int, len(d.migCount)), openAt: -1}
	}
}

// compactBelow is the load under which compact tries to empty a device;
// fuller devices rarely fit elsewhere and trying costs time.
const compactBelow = 0.75

// compact tries to empty the least-loaded shared devices by moving their
// single-device demands to other open devices (best fit), keeping a move
// only when the whole device empties.
func (pk *packer) compact(needs []need, assignments []*Assignment) {
	for _, typ := range slices.Sorted(maps.Keys(pk.open)) {
		for round := 0; round < 2; round++ {
			var open []*device
			for _, d := range pk.open[typ] {
				if d.load() < compactBelow {
					open = append(open, d)
				}
			}
			slices.SortStableFunc(open, func(a, b *device) int { return cmp.Compare(a.load(), b.load()) })
			moved := false
			for _, victim := range open {
				if victim.mode == "" {
					continue
				}
				if pk.evacuate(victim, needs, assignments) {
					moved = true
				}
			}
			if !moved {
				break
			}
		}
	}
}

// evacuate moves every demand off victim onto other open devices, or
// changes nothing.
func (pk *packer) evacuate(victim *device, needs []need, assignments []*Assignment) bool {
	type move struct {
		nd need
		to fit
	}
	var moves []move
	undo := func() {
		for i := len(moves) - 1; i >= 0; i-- {
			pk.release(moves[i].to.dev, moves[i].nd.idx, moves[i].nd)
		}
	}
	// Largest first, so the tight ones find room while there is some.
	uses := slices.Clone(victim.slices)
	slices.SortStableFunc(uses, func(a, b SliceUse) int { return cmp.Compare(b.MemoryReserved, a.MemoryReserved) })
	for _, use := range uses {
		nd := needs[use.Demand]
		if nd.n != 1 {
			undo()
			return false
		}
		best, ok := pk.bestOpen(nd, victim)
		if !ok {
			undo()
			return false
		}
		pk.commitOne(best, nd)
		moves = append(moves, move{nd: nd, to: best})
	}
	for _, m := range moves {
		pk.release(victim, m.nd.idx, m.nd)
		a := assignments[m.nd.idx]
		a.Node, a.Devices = m.to.dev.nodeName, []int{m.to.dev.index}
		a.MIGStart = m.to.migStart
	}
	return true
}

func (pk *packer) usage() []DeviceUsage {
	out := make([]DeviceUsage, len(pk.devices))
	for i, d := range pk.devices {
		out[i] = DeviceUsage{
			Node: d.nodeName, Index: d.index, Profile: d.typ, Mode: d.mode, MemoryBytes: d.memTotal,
			MemoryReserved: d.memUsed, MemoryRequested: d.memReq,
			ComputeReserved: d.compUsed, ComputeRequested: d.compReq,
			Slices: slices.Clone(d.slices),
		}
		if d.mode == KindMIG {
			out[i].MemoryReserved = d.memTotal * int64(bits.OnesCount8(d.migMask)) / hardware.MIGMemorySlices
		}
	}
	return out
}

// LowerBound is the fewest devices demands could fit on: per device type,
// the larger of total memory and total compute over one device's, rounded
// up, summed. Invalid demands are left out.
func LowerBound(demands []Demand) int {
	needs := make([]need, len(demands))
	for i, d := range demands {
		needs[i] = toNeed(i, d)
	}
	total := 0
	for _, v := range lowerBounds(needs, nil) {
		total += v
	}
	return total
}

// lowerBounds per type over needs (only those with keep[i] when keep is
// not nil).
func lowerBounds(needs []need, keep []bool) map[string]int {
	mem := map[string]float64{}
	comp := map[string]float64{}
	for i, nd := range needs {
		if nd.typ == "" || (keep != nil && !keep[i]) {
			continue
		}
		if nd.devMemory > 0 {
			mem[nd.typ] += float64(nd.mem) * float64(nd.n) / float64(nd.devMemory)
		}
		comp[nd.typ] += float64(nd.comp) * float64(nd.n) / ComputeUnits
	}
	out := map[string]int{}
	for typ := range mem {
		out[typ] = int(math.Ceil(math.Max(mem[typ], comp[typ]) - 1e-9))
	}
	for typ := range comp {
		if _, ok := out[typ]; !ok {
			out[typ] = int(math.Ceil(comp[typ] - 1e-9))
		}
	}
	return out
}

func summarise(pk *packer, needs []need, assignments []*Assignment) Summary {
	s := Summary{Demands: len(needs), DevicesTotal: len(pk.devices), PerType: map[string]TypeSummary{}}
	placed := make([]bool, len(needs))
	for i := range needs {
		placed[i] = assignments[i] != nil
		if placed[i] {
			s.Placed++
		}
	}
	lbPlaced := lowerBounds(needs, placed)
	lbTrace := lowerBounds(needs, nil)
	var memCap, memReq int64
	var compReq, used int
	type acc struct {
		memCap, memReq int64
		compReq        int
	}
	perType := map[string]*acc{}
	for _, d := range pk.devices {
		ts := s.PerType[d.typ]
		ts.Devices++
		if perType[d.typ] == nil {
			perType[d.typ] = &acc{}
		}
		if d.mode != "" {
			ts.Used++
			used++
			a := perType[d.typ]
			a.memCap += d.memTotal
			a.memReq += d.memReq
			a.compReq += d.compReq
			memCap += d.memTotal
			memReq += d.memReq
			compReq += d.compReq
			reserved := d.memUsed
			if d.mode == KindMIG {
				reserved = d.memTotal * int64(bits.OnesCount8(d.migMask)) / hardware.MIGMemorySlices
			}
			s.StrandedMemory += d.memTotal - reserved
		}
		s.PerType[d.typ] = ts
	}
	for typ, ts := range s.PerType {
		ts.LowerBound = lbPlaced[typ]
		ts.TraceLowerBound = lbTrace[typ]
		if a := perType[typ]; a != nil && ts.Used > 0 {
			ts.MemoryUtilisation = float64(a.memReq) / float64(a.memCap)
			ts.ComputeUtilisation = float64(a.compReq) / float64(ts.Used*ComputeUnits)
		}
		s.PerType[typ] = ts
	}
	for _, v := range lbPlaced {
		s.LowerBound += v
	}
	for _, v := range lbTrace {
		s.TraceLowerBound += v
	}
	s.DevicesUsed = used
	s.FreeDevices = len(pk.devices) - used
	if memCap > 0 {
		s.MemoryUtilisation = float64(memReq) / float64(memCap)
		s.Fragmentation = float64(s.StrandedMemory) / float64(memCap)
	}
	if used > 0 {
		s.ComputeUtilisation = float64(compReq) / float64(used*ComputeUnits)
	}
	return s
}

func formatBytes(b int64) string {
	switch {
	case b >= 1<<30 && b%(1<<30) == 0:
		return fmt.Sprintf("%dGi", b>>30)
	case b >= 1<<20:
		return fmt.Sprintf("%dMi", (b+mib-1)>>20)
	default:
		return fmt.Sprintf("%d", b)
	}
}
