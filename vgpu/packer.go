package vgpu

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"math/bits"
	"slices"

	"github.com/cubestudio/cube/hardware"
)

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

func newPacker(inv hardware.Inventory, policy Policy, cfg packConfig) *packer {
	pk := &packer{cfg: cfg, policy: policy, byType: map[string][]*device{},
		groups: map[string][][]*device{}, open: map[string][]*device{}}
	for ni := range inv.Nodes {
		n := &inv.Nodes[ni]
		if !n.Profile.Accelerated() || n.Unschedulable || n.Accelerators <= 0 {
			continue
		}
		prof := n.Profile
		migs := len(prof.MIGProfiles())
		group := make([]*device, 0, n.Accelerators)
		for di := 0; di < n.Accelerators; di++ {
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
