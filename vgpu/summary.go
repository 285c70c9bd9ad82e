package vgpu

import (
	"fmt"
	"math"
	"math/bits"

	"github.com/cubestudio/cube/hardware"
)

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
	Accelerators, Used, LowerBound, TraceLowerBound int
	MemoryUtilisation, ComputeUtilisation           float64
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
		ts.Accelerators++
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
