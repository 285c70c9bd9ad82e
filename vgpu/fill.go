package vgpu

import (
	"slices"
	"sort"
)

// lookAhead is how many remaining shares, in arrival order, the planner
// tries on a device before topping it off by shape.
var lookAhead = 1

// shape is a group of interchangeable shares: same kind, memory and
// compute on one device.
type shape struct {
	kind  Kind
	mem   int64
	comp  int
	items []int // need indices, taken from the front
}

// fillDevices is the planner's bin-centric phase for single-device shares
// (HAMi/Volcano slices, vNPUs): it fills one device at a time, each time
// adding the share whose size best matches the room left — the largest
// dot product of the share's size with the device's free memory, compute
// and share slots, each dimension weighted by what the remaining shares
// need of it (Panigrahy et al., "Heuristics for Vector Bin Packing",
// 2011). Open devices are filled first, then fresh ones on the busiest
// node. It returns how many needs it placed; the rest get a reason.
func (pk *packer) fillDevices(needs []need, idx []int, assignments []*Assignment) int {
	byType := map[string][]int{}
	for _, i := range idx {
		byType[needs[i].typ] = append(byType[needs[i].typ], i)
	}
	placed := 0
	types := make([]string, 0, len(byType))
	for t := range byType {
		types = append(types, t)
	}
	sort.Strings(types)
	for _, typ := range types {
		placed += pk.fillType(typ, needs, byType[typ], assignments)
	}
	return placed
}

func (pk *packer) fillType(typ string, needs []need, idx []int, assignments []*Assignment) int {
	devs := pk.byType[typ]
	if len(devs) == 0 {
		for _, i := range idx {
			needs[i].reason = pk.whyNotEmpty(needs[i])
		}
		return 0
	}
	memTotal := float64(devs[0].memTotal)
	type key struct {
		kind Kind
		mem  int64
		comp int
	}
	groups := map[key]*shape{}
	var shapes []*shape
	var remMem, remComp, remCount float64
	for _, i := range idx {
		nd := needs[i]
		k := key{nd.kind, nd.mem, nd.comp}
		g := groups[k]
		if g == nil {
			g = &shape{kind: nd.kind, mem: nd.mem, comp: nd.comp}
			groups[k] = g
			shapes = append(shapes, g)
		}
		g.items = append(g.items, i)
		remMem += float64(nd.mem) / memTotal
		remComp += float64(nd.comp) / ComputeUnits
		remCount++
	}
	// Largest shapes first so ties go to the bigger share.
	slices.SortStableFunc(shapes, func(a, b *shape) int {
		sa := float64(a.mem)/memTotal + float64(a.comp)/ComputeUnits
		sb := float64(b.mem)/memTotal + float64(b.comp)/ComputeUnits
		switch {
		case sa > sb:
			return -1
		case sa < sb:
			return 1
		}
		return 0
	})
	left := len(idx)
	placed := 0
	maxShares := float64(pk.cfg.maxShares)
	// Remaining needs in arrival order, as a linked list over positions in
	// idx (sorted by demand index), so taking from the middle is cheap.
	arrival := slices.Clone(idx)
	slices.Sort(arrival)
	pos := make(map[int]int, len(arrival))
	next := make([]int, len(arrival)+1)
	prev := make([]int, len(arrival)+1)
	head := len(arrival) // sentinel
	for p, i := range arrival {
		pos[i] = p
		next[p], prev[p] = p+1, p-1
	}
	if len(arrival) > 0 {
		prev[0] = head
		next[len(arrival)-1] = head
		next[head], prev[head] = 0, len(arrival)-1
	} else {
		next[head], prev[head] = head, head
	}
	taken := make(map[int]bool, len(arrival))
	take := func(d *device, i int) {
		taken[i] = true
		p := pos[i]
		next[prev[p]], prev[next[p]] = next[p], prev[p]
		nd := needs[i]
		pk.commitOne(fit{dev: d, migStart: -1}, nd)
		assignments[i] = &Assignment{Demand: i, Name: nd.name, Node: d.nodeName, Devices: []int{d.index}, MIGStart: -1, Template: nd.tmpl}
		remMem -= float64(nd.mem) / memTotal
		remComp -= float64(nd.comp) / ComputeUnits
		remCount--
		left--
		placed++
	}
	fitsOn := func(d *device, kind Kind, mem int64, comp int) bool {
		if d.mode != "" && d.mode != kind {
			return false
		}
		if d.memUsed+mem > d.memTotal || d.compUsed+comp > ComputeUnits {
			return false
		}
		return kind != KindSlice || maxShares <= 0 || d.shares < pk.cfg.maxShares
	}
	fill := func(d *device) int {
		added := 0
		// Arrival order mixes large and small shares in proportion; look a
		// few ahead for one that fits.
		for left > 0 {
			found := -1
			for p, n := next[head], 0; p != head && n < lookAhead; p, n = next[p], n+1 {
				nd := needs[arrival[p]]
				if fitsOn(d, nd.kind, nd.mem, nd.comp) {
					found = arrival[p]
					break
				}
			}
			if found < 0 {
				break
			}
			take(d, found)
			added++
		}
		// Then top the device off with the best-matching shapes.
		for left > 0 {
			freeMem := float64(d.memTotal-d.memUsed) / memTotal
			freeComp := float64(ComputeUnits-d.compUsed) / ComputeUnits
			freeSlots := 0.0
			if maxShares > 0 {
				freeSlots = (maxShares - float64(d.shares)) / maxShares
			}
			var best *shape
			bestScore := -1.0
			for _, g := range shapes {
				if len(g.items) == 0 {
					continue
				}
				for len(g.items) > 0 && taken[g.items[0]] {
					g.items = g.items[1:]
				}
				if len(g.items) == 0 || !fitsOn(d, g.kind, g.mem, g.comp) {
					continue
				}
				m := float64(g.mem) / memTotal
				c := float64(g.comp) / ComputeUnits
				score := remMem*m*freeMem + remComp*c*freeComp
				if maxShares > 0 && g.kind == KindSlice {
					score += remCount / maxShares * (1 / maxShares) * freeSlots
				}
				if score > bestScore {
					best, bestScore = g, score
				}
			}
			if best == nil {
				break
			}
			i := best.items[0]
			best.items = best.items[1:]
			take(d, i)
			added++
		}
		return added
	}
	// Open devices first, fullest first.
	open := slices.Clone(pk.open[typ])
	slices.SortStableFunc(open, func(a, b *device) int {
		switch la, lb := a.load(), b.load(); {
		case la > lb:
			return -1
		case la < lb:
			return 1
		}
		return 0
	})
	for _, d := range open {
		if left == 0 {
			break
		}
		fill(d)
	}
	for left > 0 {
		d := pk.freshDevice(typ)
		if d == nil || fill(d) == 0 {
			break
		}
	}
	for _, i := range idx {
		if !taken[i] {
			needs[i].reason = pk.whyNot(needs[i])
		}
	}
	return placed
}

// freshDevice is an empty device of typ on the node with the most devices
// in use.
func (pk *packer) freshDevice(typ string) *device {
	var pick *device
	pickUsed := -1
	for _, group := range pk.groups[typ] {
		used := 0
		var free *device
		for _, d := range group {
			if d.mode != "" {
				used++
			} else if free == nil {
				free = d
			}
		}
		if free != nil && used > pickUsed {
			pick, pickUsed = free, used
		}
	}
	return pick
}

func (pk *packer) whyNotEmpty(nd need) string {
	_, reason := pk.place(nd)
	return reason
}
